// Property 8 of DESIGN.md: the API's state follows PyTorch's rules. A RapidCheck state machine
// (commands.h) runs random sequences of calls on the engine and on an independent model of
// PyTorch's rules (model.h) and compares everything a user can observe after every call.
#include "proptests/api_model/commands.h"
#include "proptests/property.h"

namespace ag::api_model {
namespace {

AG_PROPERTY(ApiModel, FollowsPyTorchRules) {
  Sut sut;
  rc::state::check(Model(), sut, &gen_command);
  for (const std::string& event : sut.events) RC_TAG(event);
}

}  // namespace
}  // namespace ag::api_model
