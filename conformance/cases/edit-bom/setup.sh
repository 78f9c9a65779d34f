#!/bin/bash
# runs in the fresh workspace ($WS)
set -e
printf '\xef\xbb\xbfhello\n' > bom.txt
