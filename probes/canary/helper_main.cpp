// fsaudit-helper: the privileged half of fsaudit (see docs/security.md). Started per connection by
// fsaudit-helper.socket; serves one request on fd 0.
#include "probes/canary/helper_protocol.hpp"

int main(int argc, char** argv) { return fsaudit::canary::helper_main(argc, argv); }
