#!/bin/sh
# The action of Stopping, a command: stop the application here. Exit 0 is success, any other code a
# failure; a stdout line `okt-event: NODE` would raise that event. okt sets OKT_OPERATION_ID, OKT_NODE,
# OKT_GRAPH and OKT_PARAMS.
set -eu
echo "{{name}} stopped (operation $OKT_OPERATION_ID)"
