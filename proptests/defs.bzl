"""property_test: a cc_test that runs AG_PROPERTY cases with fixed RapidCheck parameters."""

def property_test(name, deps, cases = 100, size = "small", **kwargs):
    """A GoogleTest binary of property cases, deterministic in `bazel test //...`.

    The seed is fixed, so a bug that a property can see is caught on every run, not in some runs
    and not others; fresh seeds belong to the fuzz driver and the campaign. A failure prints the
    seed and the shrunk case; rerun a different seed with --test_env=RC_PARAMS="seed=N".

    Args:
      name: the test's name.
      deps: the property libraries (alwayslink) to run.
      cases: RapidCheck's max_success, the cases per property.
      size: the Bazel test size.
      **kwargs: passed to cc_test.
    """
    native.cc_test(
        name = name,
        size = size,
        env = {"RC_PARAMS": "verbose_progress=0 seed=20261123 max_success=%d" % cases},
        deps = deps + ["@gtest//:gtest_main"],
        **kwargs
    )
