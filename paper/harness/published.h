// Figures published elsewhere, shown beside ours: data, not code. Each record names where it was
// published and on what hardware, so a table's column header can say so.
#pragma once

#include <string>

namespace ag::paper {

struct Published {
  const char* key;       // "seed001/relu/after": what the tables ask for
  const char* text;      // the figure as published: "29.392 ms"
  double value;          // the same as a number, for ratios; NaN when it is not one number
  const char* source;    // "PR 82544"
  const char* hardware;  // "NVIDIA A100, FP32, batch 10000"
};

// The record for `key`; throws std::out_of_range naming the key when there is none.
const Published& published(const std::string& key);

}  // namespace ag::paper
