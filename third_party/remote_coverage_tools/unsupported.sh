#!/bin/sh
echo "remote_coverage_tools stand-in: 'bazel coverage' is not supported in this offline workspace" >&2
exit 1
