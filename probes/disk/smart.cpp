#include "probes/disk/smart.hpp"

#include <nlohmann/json.hpp>

namespace fsaudit::disk {

using nlohmann::json;

ExitBits decode_exit_status(int status) {
  // smartctl(8), RETURN VALUES.
  static const char* const kFailures[] = {
      "bit 0: smartctl could not parse its command line",
      "bit 1: the device could not be opened, or it is in a low-power mode (-n standby)",
      "bit 2: a SMART or other command to the disk failed, or a SMART data structure has a checksum error"};
  ExitBits b;
  for (int i = 0; i < 3; ++i)
    if (status & (1 << i)) b.failures.push_back(kFailures[i]);
  for (int i = 3; i < 8; ++i)
    if (status & (1 << i)) b.findings.push_back(kSmartFindings[i - 3]);
  if (status < 0 || status > 255) b.failures.push_back("exit status " + std::to_string(status) + " is not 0-255");
  return b;
}

namespace {

const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object()) return nullptr;
    auto it = p->find(k);
    if (it == p->end()) return nullptr;
    p = &*it;
  }
  return p;
}
std::optional<std::uint64_t> u64(const json& j, std::initializer_list<const char*> path) {
  auto p = at(j, path);
  if (!p || !p->is_number_integer() || (p->is_number_integer() && !p->is_number_unsigned() && p->get<std::int64_t>() < 0))
    return std::nullopt;
  return p->get<std::uint64_t>();
}
std::optional<double> num(const json& j, std::initializer_list<const char*> path) {
  auto p = at(j, path);
  if (!p || !p->is_number()) return std::nullopt;
  return p->get<double>();
}
std::optional<bool> boolean(const json& j, std::initializer_list<const char*> path) {
  auto p = at(j, path);
  if (!p || !p->is_boolean()) return std::nullopt;
  return p->get<bool>();
}
std::string str(const json& j, std::initializer_list<const char*> path) {
  auto p = at(j, path);
  return p && p->is_string() ? p->get<std::string>() : std::string();
}

// Raw value of ATA attribute `id` (ata_smart_attributes.table[].raw.value).
std::optional<std::uint64_t> ata_raw(const json& j, int id) {
  auto t = at(j, {"ata_smart_attributes", "table"});
  if (!t || !t->is_array()) return std::nullopt;
  for (const auto& a : *t)
    if (u64(a, {"id"}) == static_cast<std::uint64_t>(id)) return u64(a, {"raw", "value"});
  return std::nullopt;
}

// The newest self-test entry that has a verdict. ATA logs are newest first (standard or extended
// table); NVMe's log table too; SCSI numbers them scsi_self_test_0 (newest) upwards.
void last_self_test(const json& j, SmartReport& r) {
  for (const char* kind : {"extended", "standard"}) {
    auto t = at(j, {"ata_smart_self_test_log", kind, "table"});
    if (!t || !t->is_array()) continue;
    for (const auto& e : *t)
      if (auto p = boolean(e, {"status", "passed"})) {
        r.last_self_test_passed = *p;
        r.last_self_test = str(e, {"status", "string"});
        return;
      }
  }
  if (auto t = at(j, {"nvme_self_test_log", "table"}); t && t->is_array())
    for (const auto& e : *t)
      if (auto v = u64(e, {"self_test_result", "value"})) {
        r.last_self_test_passed = *v == 0;  // 0: completed without error
        r.last_self_test = str(e, {"self_test_result", "string"});
        return;
      }
  for (int i = 0; i < 20; ++i) {
    auto e = at(j, {("scsi_self_test_" + std::to_string(i)).c_str()});
    if (!e) break;
    auto v = u64(*e, {"result", "value"});
    if (!v || *v == 15) continue;  // 15: in progress
    r.last_self_test_passed = *v == 0;
    r.last_self_test = str(*e, {"result", "string"});
    return;
  }
  // No log: the last self-test execution status of the ATA data structure.
  if (auto p = boolean(j, {"ata_smart_data", "self_test", "status", "passed"})) {
    r.last_self_test_passed = *p;
    r.last_self_test = str(j, {"ata_smart_data", "self_test", "status", "string"});
  }
}

std::string messages(const json& j) {
  std::string s;
  if (auto m = at(j, {"smartctl", "messages"}); m && m->is_array())
    for (const auto& e : *m) {
      auto t = str(e, {"string"});
      if (!t.empty()) s += (s.empty() ? "" : "; ") + t;
    }
  return s;
}

bool mentions(const std::string& text, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (text.find(n) != std::string::npos) return true;
  return false;
}

}  // namespace

Result<SmartReport> parse_smartctl_json(std::string_view text, std::optional<int> exit_status) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return err("smartctl printed nothing");
    return err("smartctl output is not JSON (cut short or garbage): \"" +
               std::string(text.substr(0, std::min<std::size_t>(text.size(), 60))) + "\"");
  }
  if (!j.is_object() || !at(j, {"smartctl"}))
    return err("not a smartctl --json report (no \"smartctl\" object)");
  SmartReport r;
  auto st = at(j, {"smartctl", "exit_status"});
  if (st && st->is_number_integer()) r.exit_status = st->get<int>();
  else if (exit_status) r.exit_status = *exit_status;
  else return err("smartctl --json report without smartctl.exit_status");
  r.bits = decode_exit_status(r.exit_status);
  r.protocol = str(j, {"device", "protocol"});
  r.model = str(j, {"model_name"});
  if (r.model.empty()) r.model = str(j, {"scsi_model_name"});
  r.serial = str(j, {"serial_number"});
  r.passed = boolean(j, {"smart_status", "passed"});
  const std::string msgs = messages(j);
  auto with_msgs = [&](std::string why) { return msgs.empty() ? why : why + " (smartctl: " + msgs + ")"; };

  // A sleeping disk under -n standby: bit 1 with the power mode or message saying so.
  std::string power = str(j, {"power_mode", "name"});
  if ((r.exit_status & 2) && (power == "STANDBY" || power == "SLEEP" || mentions(msgs, {"STANDBY mode", "SLEEP mode", "in low-power mode"}))) {
    r.state = SmartState::standby;
    r.reason = with_msgs("the disk is in " + (power.empty() ? std::string("a low-power mode") : power) +
                         "; not woken (-n standby)");
    return r;
  }
  // No SMART on this device: said outright, or a device type smartctl cannot talk SMART to.
  auto available = boolean(j, {"smart_support", "available"});
  bool no_health = !r.passed && !at(j, {"ata_smart_attributes"}) && !at(j, {"nvme_smart_health_information_log"}) &&
                   !at(j, {"scsi_grown_defect_list"}) && !at(j, {"scsi_error_counter_log"});
  if ((available && !*available) ||
      mentions(msgs, {"Unknown USB bridge", "Unable to detect device type", "SMART support is: Unavailable",
                      "Device does not support SMART", "Please specify device type"}) ||
      (no_health && (r.exit_status & 4) && !(r.exit_status & 3) && at(j, {"device"}))) {
    r.state = SmartState::unsupported;
    r.reason = with_msgs("no SMART on this device");
    return r;
  }

  r.reallocated_sectors = ata_raw(j, 5);
  r.pending_sectors = ata_raw(j, 197);
  r.offline_uncorrectable = ata_raw(j, 198);
  r.udma_crc_errors = ata_raw(j, 199);
  if (at(j, {"nvme_smart_health_information_log"})) {
    const auto& n = *at(j, {"nvme_smart_health_information_log"});
    r.critical_warning = u64(n, {"critical_warning"});
    r.media_errors = u64(n, {"media_errors"});
    r.available_spare = num(n, {"available_spare"});
    r.available_spare_threshold = num(n, {"available_spare_threshold"});
    r.percentage_used = num(n, {"percentage_used"});
  }
  r.grown_defects = u64(j, {"scsi_grown_defect_list"});
  r.uncorrected_read = u64(j, {"scsi_error_counter_log", "read", "total_uncorrected_errors"});
  r.uncorrected_write = u64(j, {"scsi_error_counter_log", "write", "total_uncorrected_errors"});
  r.uncorrected_verify = u64(j, {"scsi_error_counter_log", "verify", "total_uncorrected_errors"});
  r.temperature_celsius = num(j, {"temperature", "current"});
  r.power_on_hours = num(j, {"power_on_time", "hours"});
  last_self_test(j, r);

  if (!r.bits.failures.empty()) {
    std::string why;
    for (const auto& f : r.bits.failures) why += (why.empty() ? "" : "; ") + f;
    r.state = SmartState::failed;
    r.reason = with_msgs("smartctl exit status " + std::to_string(r.exit_status) + ": " + why);
    return r;
  }
  if (!r.passed && no_health) {
    r.state = SmartState::failed;
    r.reason = with_msgs("smartctl reported neither a SMART status nor any health data");
  }
  return r;
}

std::string at_risk(const SmartReport& r) {
  std::string why;
  auto add = [&](const std::string& w) { why += (why.empty() ? "" : ", ") + w; };
  if (r.passed == false) add("SMART overall status failing");
  if (r.reallocated_sectors.value_or(0) > 0) add(std::to_string(*r.reallocated_sectors) + " reallocated sectors");
  if (r.pending_sectors.value_or(0) > 0) add(std::to_string(*r.pending_sectors) + " pending sectors");
  if (r.offline_uncorrectable.value_or(0) > 0) add(std::to_string(*r.offline_uncorrectable) + " offline uncorrectable sectors");
  if (r.critical_warning.value_or(0) != 0) add("NVMe critical warning " + std::to_string(*r.critical_warning));
  if (r.available_spare && r.available_spare_threshold && *r.available_spare <= *r.available_spare_threshold)
    add("NVMe available spare at or below its threshold");
  if (r.grown_defects.value_or(0) > 0) add(std::to_string(*r.grown_defects) + " grown defects");
  return why;
}

}  // namespace fsaudit::disk
