#include "proptests/property.h"

namespace ag::proptests {

std::vector<NamedProperty>& property_registry() {
  static std::vector<NamedProperty> registry;
  return registry;
}

bool register_property(const char* suite, const char* name, void (*body)()) {
  property_registry().push_back({std::string(suite) + "." + name, body});
  return true;
}

}  // namespace ag::proptests
