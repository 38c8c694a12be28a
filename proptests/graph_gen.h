#pragma once

// RapidCheck generators for GraphSpec and EngineOptions. Shrinking works on the plain fields of
// the spec (fewer steps, smaller indices, flags flipped), and every shrunk spec is a valid graph
// (proptests/random_graph.h), so counterexamples shrink to small readable graphs.

#include <rapidcheck.h>

#include "engine/options.h"
#include "proptests/random_graph.h"

namespace rc {

template <>
struct Arbitrary<ag::proptests::StepSpec> {
  static Gen<ag::proptests::StepSpec> arbitrary() {
    using ag::proptests::StepSpec;
    return gen::build<StepSpec>(
        gen::set(&StepSpec::op, gen::inRange(0, ag::proptests::kNumStepChoices)),
        gen::set(&StepSpec::a, gen::inRange<uint32_t>(0, 64)),
        gen::set(&StepSpec::b, gen::inRange<uint32_t>(0, 64)));
  }
};

template <>
struct Arbitrary<ag::proptests::GraphSpec> {
  static Gen<ag::proptests::GraphSpec> arbitrary() {
    using ag::proptests::GraphSpec;
    using ag::proptests::StepSpec;
    // The size parameter sets how many leaves, steps, outputs and requested inputs there are
    // (at RapidCheck's default maximum size, 100: up to 6 leaves and 60 steps); the elements
    // themselves are drawn at full size, so every shape, op and index stays reachable.
    auto elements = [](auto g) { return gen::resize(100, g); };
    return gen::build<GraphSpec>(
        gen::set(&GraphSpec::leaf_shapes,
                 gen::scale(0.06, gen::nonEmpty(gen::container<std::vector<int>>(
                                      elements(gen::inRange(0, 6)))))),
        gen::set(
            &GraphSpec::requires_grad,
            gen::scale(0.06, gen::container<std::vector<bool>>(elements(gen::arbitrary<bool>())))),
        gen::set(&GraphSpec::steps, gen::scale(0.6, gen::container<std::vector<StepSpec>>(
                                                        elements(gen::arbitrary<StepSpec>())))),
        gen::set(&GraphSpec::outputs,
                 gen::scale(0.03, gen::nonEmpty(gen::container<std::vector<uint32_t>>(
                                      elements(gen::inRange<uint32_t>(0, 64)))))),
        gen::set(&GraphSpec::requested,
                 gen::scale(0.04, gen::nonEmpty(gen::container<std::vector<uint32_t>>(
                                      elements(gen::inRange<uint32_t>(0, 64)))))),
        gen::set(&GraphSpec::value_seed, gen::inRange<uint32_t>(0, 1000)));
  }
};

}  // namespace rc

namespace ag::proptests {

// Prints a counterexample as its graph.
inline void showValue(const GraphSpec& spec, std::ostream& os) { os << "\n" << describe(spec); }

// Every combination of the engine options (EngineOptions::kCombinations, all off first), for
// properties that must hold under each.
inline std::vector<EngineOptions> all_option_combinations() {
  std::vector<EngineOptions> out;
  for (uint32_t bits = 0; bits < EngineOptions::kCombinations; ++bits) {
    out.push_back(EngineOptions::from_bits(bits));
  }
  return out;
}

}  // namespace ag::proptests
