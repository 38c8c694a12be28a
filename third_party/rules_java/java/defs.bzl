"""Offline shim for @rules_java//java:defs.bzl: forwards every rule to Bazel's native one.

Only loaded by Bazel 4.2.3's bundled tools; this project has no Java code.
"""

def java_binary(**kwargs):
    native.java_binary(**kwargs)

def java_import(**kwargs):
    native.java_import(**kwargs)

def java_library(**kwargs):
    native.java_library(**kwargs)

def java_lite_proto_library(**kwargs):
    native.java_lite_proto_library(**kwargs)

def java_package_configuration(**kwargs):
    native.java_package_configuration(**kwargs)

def java_plugin(**kwargs):
    native.java_plugin(**kwargs)

def java_proto_library(**kwargs):
    native.java_proto_library(**kwargs)

def java_runtime(**kwargs):
    native.java_runtime(**kwargs)

def java_test(**kwargs):
    native.java_test(**kwargs)

def java_toolchain(**kwargs):
    native.java_toolchain(**kwargs)
