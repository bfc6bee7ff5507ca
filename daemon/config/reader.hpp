#pragma once
// Strict, typed reading of one YAML mapping. Every key a section knows is asked for by name; finish()
// then rejects any key nobody asked for, suggesting the closest known one. Every error names
// file:line:column, the full key path, what is wrong and how to fix it.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsaudit::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Section {
 public:
  // `node` must be a map (or null, meaning "all defaults"). `path` is the dotted key path ("" at top).
  Section(YAML::Node node, std::string path, std::shared_ptr<const std::string> file);

  bool has(const std::string& key);
  std::string string(const std::string& key, const std::string& def);
  bool boolean(const std::string& key, bool def);
  std::int64_t integer(const std::string& key, std::int64_t def, std::int64_t min, std::int64_t max);
  double number(const std::string& key, double def, double min, double max);
  std::chrono::milliseconds duration(const std::string& key, std::chrono::milliseconds def,
                                     std::chrono::milliseconds min = std::chrono::milliseconds(0),
                                     std::chrono::milliseconds max = std::chrono::hours(24 * 366));
  std::uint64_t size(const std::string& key, std::uint64_t def, std::uint64_t min = 0,
                     std::uint64_t max = UINT64_MAX);
  // One of `choices`.
  std::string choice(const std::string& key, const std::string& def, const std::vector<std::string>& choices);
  std::vector<std::string> strings(const std::string& key, const std::vector<std::string>& def);
  std::map<std::string, std::string> string_map(const std::string& key);
  // A nested mapping (an empty Section if absent).
  Section section(const std::string& key);
  // A sequence of mappings.
  std::vector<Section> list(const std::string& key);
  // Keys of a mapping whose keys are names (e.g. probes: {zfs: {...}}): returns (name, section) pairs.
  std::vector<std::pair<std::string, Section>> named_sections(const std::string& key,
                                                              const std::vector<std::string>& allowed);

  // Throws ConfigError for keys never asked for.
  void finish();

  // "FILE:LINE:COL: key 'a.b': MESSAGE" for a key of this section (or the section itself if key empty).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  std::string key_path(const std::string& key) const;
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node get(const std::string& key);
  std::string where(const YAML::Node& n) const;
  [[noreturn]] void fail_at(const YAML::Node& n, const std::string& key, const std::string& message) const;
  std::string scalar(const std::string& key, const YAML::Node& n, const std::string& expected);

  YAML::Node node_;
  std::string path_;
  std::shared_ptr<const std::string> file_;
  std::set<std::string> asked_;
};

// Parses YAML text; a syntax error becomes a ConfigError with file:line:column.
Section open_document(const std::string& yaml_text, const std::string& file_label);

}  // namespace fsaudit::config
