#!/bin/bash
# runs in the fresh workspace ($WS)
set -e
echo 'not an image' > data
