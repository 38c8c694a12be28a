#include "paper/workloads/variant_rounds.h"

#include <cmath>
#include <iostream>
#include <optional>

#include "ops/cpu/parallel.h"
#include "paper/harness/markdown.h"
#include "paper/workloads/timing.h"

namespace ag::paper {

std::string metric_under(const std::string& metric, const Condition& condition) {
  return metric + " [" + condition.name + "]";
}

Rounds measure_variants(const Context& context, const std::vector<Variant>& variants,
                        const Condition& condition, int rounds, double stretch) {
  std::vector<Contender> contenders;
  for (const Variant& v : variants) {
    if (v.ours) {
      contenders.push_back({v.name, [&context, &v, stretch] {
                              double ms = 0;
                              ops::run_with_threads(context.threads, [&] {
                                ms = seconds_per_call_over(stretch, v.ours) * 1e3;
                              });
                              return std::optional<double>(ms);
                            }});
    } else {
      contenders.push_back({v.name, [&v]() -> std::optional<double> {
                              if (!v.peer || !v.peer->available()) return std::nullopt;
                              const auto s = v.peer->value(v.task);
                              return s ? std::optional<double>(*s * 1e3) : std::nullopt;
                            }});
    }
  }
  const Rounds measured = interleaved_rounds(rounds, contenders);
  const std::vector<std::optional<double>> med = measured.medians();
  std::cout << "  " << variants.front().workload << ", " << condition.name << ":";
  for (size_t c = 0; c < variants.size(); ++c) {
    if (!med[c]) continue;
    context.results->add(variants[c].workload, variants[c].name, metric_under(kStepTime, condition),
                         *med[c], "ms");
    if (condition.quiet())
      context.results->add(variants[c].workload, variants[c].name, kStepTime, *med[c], "ms");
    std::cout << " " << variants[c].name << " " << format(*med[c]) << " ms;";
  }
  std::cout << std::endl;
  return measured;
}

void add_middle_half(const Context& context, const Rounds& rounds, size_t a, size_t b,
                     const std::string& workload, const std::string& variant,
                     const Condition& condition) {
  const auto [q1, q3] = rounds.middle_half(a, b);
  if (std::isnan(q1)) return;
  context.results->add(workload, variant, metric_under(kFirstQuartile, condition), q1, "x");
  context.results->add(workload, variant, metric_under(kThirdQuartile, condition), q3, "x");
}

double step_ms(const Results& results, const std::string& workload, const std::string& variant,
               const Condition& condition) {
  return results.get(workload, variant, metric_under(kStepTime, condition));
}

std::string middle_half(const Results& results, const std::string& workload,
                        const std::string& variant, const Condition& condition) {
  return ratio_range(results.get(workload, variant, metric_under(kFirstQuartile, condition)),
                     results.get(workload, variant, metric_under(kThirdQuartile, condition)));
}

}  // namespace ag::paper
