#!/bin/sh
. "$SRC/tests/e2e/lib.sh"
finish
