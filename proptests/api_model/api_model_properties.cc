// The API's state follows PyTorch's rules (proptests/README.md). A RapidCheck state machine
// (commands.h) runs random sequences of calls on the engine and on an independent model of
// PyTorch's rules (model.h) and compares everything a user can observe after every call.
#include "proptests/api_model/commands.h"
#include "proptests/property.h"

namespace ag::proptests {
namespace {

AG_PROPERTY(ApiModel, FollowsPyTorchRules) {
  Sut sut;
  rc::state::check(Model(), sut, &gen_command);
  for (const std::string& event : sut.events) RC_TAG(event);
}

}  // namespace
}  // namespace ag::proptests
