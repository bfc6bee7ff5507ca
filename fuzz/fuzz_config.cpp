// The YAML config reader: bad input is a ConfigError with a message, never a crash or another exception.
#include "daemon/config/config.hpp"
#include "daemon/config/reader.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fsaudit;
  try {
    (void)config::parse_config(std::string(fuzz::as_text(data, size)), "fuzz.yaml");
  } catch (const config::ConfigError&) {
  }
  return 0;
}
