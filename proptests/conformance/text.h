#pragma once

// Small text helpers shared by the program and record formats.

#include <cstdint>
#include <string>
#include <vector>

namespace ag::proptests {

// Splits on `sep`, dropping empty pieces.
std::vector<std::string> split(const std::string& s, char sep);
std::string trim(const std::string& s);

// The shortest text that reads back as exactly `x` ("nan", "inf", "-inf" for the rest), as
// Python's repr(float) writes it, so both sides of a comparison print the same digits.
std::string format_double(double x);
double parse_double(const std::string& s);

// "[2,3]", "[]" for a 0-dim shape.
std::string format_shape(const std::vector<int64_t>& shape);
std::vector<int64_t> parse_shape(const std::string& s);

}  // namespace ag::proptests
