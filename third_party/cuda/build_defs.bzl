"""nvcc through a genrule: cuda_library() compiles .cu files into a cc_library.

Each .cu becomes one object file (whole-program device code, no -rdc, so no device-link step);
its host stubs register the kernels with the CUDA runtime at static-initialization time, which
is why the library depends on @cuda_config//:cudart_static. Where CUDA_AVAILABLE is false
it defines an empty cc_library instead (and //cuda builds its stub).
"""

load("@cuda_config//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

# Real machine code for Ampere (sm_80) and Hopper (sm_90), plus sm_90 PTX that newer GPUs
# JIT-compile. nvcc 13 no longer targets anything older than sm_75.
CUDA_ARCH_FLAGS = [
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=sm_90",
    "-gencode=arch=compute_90,code=compute_90",
]

NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler=-fPIC",
    # Host-side warnings are errors, as for the project's .cc files.
    "-Xcompiler=-Wall,-Wextra,-Werror",
    "--Werror=all-warnings",
    # Includes are spelled from the workspace root ("cuda/kernels.h").
    "-I.",
]

def cuda_library(name, srcs, hdrs = [], deps = [], visibility = None, **kwargs):
    """A cc_library of the nvcc-compiled objects of `srcs` (.cu files).

    `hdrs` are the headers the .cu files include (they are the genrule's inputs, so keep the
    device code's includes inside this package); `deps` are linked with the objects.
    """
    if not CUDA_AVAILABLE:
        native.cc_library(name = name, visibility = visibility)
        return
    objs = []
    for src in srcs:
        if not src.endswith(".cu"):
            fail("cuda_library %s: %s is not a .cu file" % (name, src))
        obj = "%s_%s.o" % (name, src[:-len(".cu")].replace("/", "_"))
        native.genrule(
            name = obj.replace(".", "_"),
            srcs = [src] + hdrs,
            outs = [obj],
            cmd = " ".join([NVCC, "-c", "$(location %s)" % src, "-o", "$@"] +
                           NVCC_FLAGS + CUDA_ARCH_FLAGS),
            message = "nvcc %s" % src,
            visibility = ["//visibility:private"],
        )
        objs.append(obj)
    native.cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@cuda_config//:cudart_static"],
        visibility = visibility,
        **kwargs
    )
