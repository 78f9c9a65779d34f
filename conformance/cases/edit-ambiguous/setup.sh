#!/bin/bash
# runs in the fresh workspace ($WS)
set -e
printf 'foo 1\nfoo 2 foo\naaa\n' > m.txt
