"""Offline shim for @rules_cc//cc:defs.bzl: forwards every rule to Bazel's native one.

Bazel 4.2.3's bundled workspace loads this file (tools/cpp, tools/jdk, ...); the real
rules_cc would be downloaded, and Debian's packaged rules_cc is too new for this Bazel.
"""

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_proto_library(**kwargs):
    native.cc_proto_library(**kwargs)

def cc_shared_library(**kwargs):
    native.cc_shared_library(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)

def fdo_prefetch_hints(**kwargs):
    native.fdo_prefetch_hints(**kwargs)

def fdo_profile(**kwargs):
    native.fdo_profile(**kwargs)

def objc_import(**kwargs):
    native.objc_import(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)
