#!/bin/bash
# runs in the fresh workspace ($WS)
set -e
echo a > a.txt
