#include "probes/canary/lab.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/canary/cli.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/stack.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr const char* kZfsLock = "/run/fsaudit-lab-zfs-fuse.lock";

bool under(const fs::path& p, const fs::path& dir) {
  auto a = p.lexically_normal().string(), b = dir.lexically_normal().string();
  if (!b.empty() && b.back() != '/') b += '/';
  return a.rfind(b, 0) == 0 && a.find("/../") == std::string::npos;
}
}  // namespace

LabLeftovers sanitize_leftovers(const std::string& text, const fs::path& dir) {
  LabLeftovers out;
  json j;
  try {
    j = json::parse(text);
  } catch (...) {
    out.ignored.push_back("lab.json is unreadable");
    return out;
  }
  auto list = [&](const char* k) {
    std::vector<std::string> v;
    try {
      v = j.value(k, std::vector<std::string>{});
    } catch (...) {
      out.ignored.push_back(std::string("lab.json: '") + k + "' is not a list of strings");
    }
    return v;
  };
  for (const auto& m : list("mounts"))
    (under(m, dir / "mnt") ? out.mounts : out.ignored).push_back(m);
  for (const auto& p : list("pools")) {
    bool ok = p.size() > 10 && p.rfind("fsauditlab", 0) == 0 &&
              p.find_first_not_of("0123456789", 10) == std::string::npos;
    (ok ? out.pools : out.ignored).push_back(p);
  }
  for (const auto& f : list("files")) {
    std::error_code ec;
    bool ok = fs::path(f).parent_path().lexically_normal() == dir.lexically_normal() && !fs::is_symlink(f, ec) &&
              (!fs::exists(f, ec) || fs::is_regular_file(f, ec));
    (ok ? out.files : out.ignored).push_back(f);
  }
  out.loops = list("loops");  // kept only when still backed by a file of this directory (checked by setup)
  return out;
}

Result<void> check_lab_dir(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return err("cannot stat " + dir.string(), ErrorKind::refused);
  if (S_ISLNK(st.st_mode)) return err(dir.string() + " is a symlink", ErrorKind::refused);
  if (!S_ISDIR(st.st_mode)) return err(dir.string() + " is not a directory", ErrorKind::refused);
  if (st.st_uid != ::geteuid())
    return err(dir.string() + " is owned by uid " + std::to_string(st.st_uid) + ", not by fsauditd", ErrorKind::refused);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return err(dir.string() + " is writable by group or others", ErrorKind::refused);
  return {};
}

CommandResult Lab::run(std::vector<std::string> argv, int timeout_s) {
  CommandSpec s;
  s.argv = std::move(argv);
  s.timeout = std::chrono::seconds(timeout_s);
  return runner_.run(s);
}

void Lab::save() const {
  json j{{"loops", loops_}, {"mounts", mounts_}, {"pools", pools_}, {"files", files_}};
  (void)write_file_atomic(dir_ / "lab.json", j.dump(2) + "\n");
}

// A fresh image file, never through a symlink someone placed there.
Result<void> create_image(const std::string& file, std::uint64_t size) {
  if (::unlink(file.c_str()) != 0 && errno != ENOENT) return err("cannot remove an old " + file + ": " + std::strerror(errno));
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return err("cannot create " + file + ": " + std::strerror(errno));
  int rc = ::ftruncate(fd, static_cast<off_t>(size));
  int e = errno;
  ::close(fd);
  if (rc != 0) return err("cannot size " + file + ": " + std::strerror(e));
  return {};
}

Result<std::string> Lab::image(const std::string& name, std::uint64_t size) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') return err("bad lab image name " + name);
  const std::string file = (dir_ / name).string();
  if (auto c = create_image(file, size); !c) return err(c.error());
  files_.push_back(file);
  save();
  return file;
}

Result<std::string> Lab::loop_device(const std::string& name, std::uint64_t size) {
  auto file = image(name, size);
  if (!file) return file;
  auto r = run({"losetup", "-f", "--show", *file});
  if (!r.ok()) return err("losetup -f --show " + *file + ": " + r.describe());
  std::string dev(trim(r.out));
  loops_.push_back(dev);
  save();
  return dev;
}

Result<void> Lab::mount(const std::string& device, const std::string& mountpoint, const std::vector<std::string>& options) {
  if (!under(mountpoint, dir_ / "mnt")) return err("a lab mount belongs under " + (dir_ / "mnt").string() + ", not " + mountpoint);
  std::vector<std::string> argv = {"mount"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(device);
  argv.push_back(mountpoint);
  auto r = run(argv);
  if (!r.ok()) return err("mount " + device + ": " + r.describe());
  mounts_.push_back(mountpoint);
  save();
  return {};
}

// zfs-fuse is one per machine. The lab starts (and then owns, under the lock) one only when none
// runs; a zfs-fuse that runs already is used as it is, for pools of the lab's own, and never
// stopped by the lab.
Result<void> Lab::start_zfs() {
  if (find_tool("zfs-fuse").empty() || find_tool("zpool").empty())
    return err("zfs-fuse is not installed", ErrorKind::not_installed);
  if (::access("/dev/fuse", R_OK | W_OK) != 0) return err("no /dev/fuse");
  if (zfs_pid_ > 0 || run({"zpool", "list", "-H"}, 10).ok()) return {};
  zfs_lock_fd_ = ::open(kZfsLock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (zfs_lock_fd_ < 0 || ::flock(zfs_lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return err(std::string("zfs-fuse is being started or stopped by another lab user (") + kZfsLock + " is locked)");
  if (run({"zpool", "list", "-H"}, 10).ok()) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int fd = ::open((dir_ / "zfs-fuse.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execlp("zfs-fuse", "zfs-fuse", "--no-daemon", "--no-kstat-mount", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  zfs_pid_ = pid;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (run({"zpool", "list", "-H"}, 10).ok()) return {};
  }
  return err("zfs-fuse did not come up within 10 s (see " + (dir_ / "zfs-fuse.log").string() + ")");
}

// Digits only after the prefix (what sanitize_leftovers accepts); unique per stack of this process.
std::string Lab::new_pool_name() { return "fsauditlab" + std::to_string(::getpid()) + std::to_string(++pool_serial_); }

void Lab::created_pool(const std::string& pool) {
  pools_.push_back(pool);
  save();
}

Result<void> Lab::wait_mounted(const std::string& mountpoint) {
  for (int i = 0; i < 100; ++i) {
    if (auto m = mounted_at(host_, mountpoint); m && *m) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return err("the lab pool did not mount at " + mountpoint);
}

Result<config::CanaryTarget> Lab::build_stack(const config::Config& cfg, const std::string& stack) {
  const config::LabStack* s = config::find_lab_stack(stack);
  if (!s) return err("unknown lab stack " + stack);
  config::CanaryTarget t;
  t.name = "lab-" + stack;
  t.fs = s->fs;
  t.layout = s->layout;
  t.mountpoint = (dir_ / "mnt" / stack).string();
  t.interval = cfg.canary.lab.interval;
  t.timeout = std::chrono::minutes(10);
  std::error_code ec;
  fs::create_directories(t.mountpoint, ec);
  if (ec) return err("cannot create " + t.mountpoint + ": " + ec.message());
  auto ops = make_canary_ops(t, StackEnv{runner_, tools_, {}, std::chrono::minutes(2)}, cfg.host);
  if (!ops) return err_in("", ops);
  const LabSpec spec{s->name, s->profile, s->members, s->copies, cfg.canary.lab.image_size, cfg.canary.lab.xfs_image_size};
  if (auto built = (*ops)->build_lab(*this, spec); !built) return err_in("", built);
  t.devices = (*ops)->target().devices;
  t.pool = (*ops)->target().pool;
  targets_.push_back(t);
  return t;
}

Result<std::unique_ptr<Lab>> Lab::open(const config::Config& cfg) {
  std::unique_ptr<Lab> lab(new Lab());
  lab->host_ = cfg.host;
  lab->tools_ = cfg.tools;
  lab->dir_ = cfg.canary.lab.dir.empty() ? cfg.state_dir / "lab" : fs::path(cfg.canary.lab.dir);
  std::error_code ec;
  fs::create_directories(lab->dir_, ec);
  if (ec) return err("cannot create the lab directory " + lab->dir_.string() + ": " + ec.message());
  if (auto usable = check_lab_dir(lab->dir_); !usable) return err_in("refusing the lab directory: ", usable);
  // Leftovers of a previous lab that did not tear down (crash, SIGKILL): only what this lab could
  // have made.
  if (auto t = read_file(lab->dir_ / "lab.json")) {
    auto left = sanitize_leftovers(*t, lab->dir_);
    for (const auto& i : left.ignored)
      lab->warnings_.push_back("lab.json names " + i + ", which the lab cannot have made: left alone");
    lab->mounts_ = left.mounts;
    lab->files_ = left.files;
    for (const auto& p : left.pools) {
      // Only a pool whose vdevs are all files of this lab directory.
      auto st = lab->run({"zpool", "status", p}, 30);
      bool ours = false;
      if (st.ok()) {
        auto rep = zfs::parse_zpool_status(st.out);
        ours = rep && !rep->pools.empty();
        if (ours)
          for (const auto& v : rep->pools[0].vdevs)
            if (v.leaf && !under(v.name, lab->dir_)) ours = false;
      }
      if (ours) lab->pools_.push_back(p);
      else if (st.ok()) lab->warnings_.push_back("pool " + p + " has vdevs outside " + lab->dir_.string() + ": left alone");
    }
    // Only loop devices still backed by a file of this lab directory.
    for (const auto& l : left.loops) {
      auto bf = read_file(cfg.host.sys("class/block/" + fs::path(l).filename().string() + "/loop/backing_file"));
      if (bf && under(std::string(trim(*bf)), lab->dir_)) lab->loops_.push_back(l);
    }
    lab->teardown();
    lab->torn_down_ = false;
    lab->loops_.clear();
    lab->mounts_.clear();
    lab->pools_.clear();
    lab->files_.clear();
  }
  return lab;
}

Result<std::unique_ptr<Lab>> Lab::build(const config::Config& cfg) {
  auto lab = open(cfg);
  if (!lab) return lab;
  for (const auto& s : cfg.canary.lab.stacks)
    if (auto t = (*lab)->build_stack(cfg, s); !t) return err_in("lab stack " + s + " not built: ", t);
  (*lab)->save();
  return lab;
}

Result<std::unique_ptr<Lab>> Lab::setup(config::Config& cfg) {
  auto opened = open(cfg);
  if (!opened) return opened;
  auto& lab = *opened;
  for (const auto& s : cfg.canary.lab.stacks) {
    auto t = lab->build_stack(cfg, s);
    if (!t) {
      lab->warnings_.push_back("lab stack " + s + " not built: " + t.error());
      continue;
    }
    cfg.canary.canaries.push_back(*t);
    if (auto in = init_canary(cfg, t->name, lab->runner_); !in) {
      cfg.canary.canaries.pop_back();
      lab->targets_.pop_back();
      lab->warnings_.push_back("lab stack " + s + " not built: canary init: " + in.error());
      continue;
    }
    lab->canaries_.push_back(t->name);
  }
  lab->save();
  if (lab->canaries_.empty()) {
    std::string all;
    for (const auto& w : lab->warnings_) all += (all.empty() ? "" : "; ") + w;
    lab->teardown();
    return err("lab mode: no canary could be built: " + all);
  }
  return opened;
}

void Lab::teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  for (auto it = pools_.rbegin(); it != pools_.rend(); ++it)
    for (int i = 0; i < 10; ++i) {
      if (run({"zpool", "destroy", "-f", *it}, 60).ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) {
    bool done = false;
    for (int i = 0; i < 20 && !done; ++i) {
      auto m = mounted_at(host_, *it);
      if (m && !*m) done = true;
      else if (run({"umount", *it}, 60).ok()) done = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (!done) run({"umount", "-l", *it}, 60);
  }
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
    for (int i = 0; i < 20; ++i) {
      if (run({"losetup", "-d", *it}, 30).ok()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  if (zfs_pid_ > 0) {
    ::kill(zfs_pid_, SIGTERM);
    int st = 0;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      if (::waitpid(zfs_pid_, &st, WNOHANG) == zfs_pid_) gone = true;
      else std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!gone) {
      ::kill(zfs_pid_, SIGKILL);
      ::waitpid(zfs_pid_, &st, 0);
    }
    zfs_pid_ = -1;
  }
  if (zfs_lock_fd_ >= 0) {
    ::close(zfs_lock_fd_);
    zfs_lock_fd_ = -1;
  }
  std::error_code ec;
  for (const auto& f : files_) fs::remove(f, ec);
  fs::remove(dir_ / "lab.json", ec);
}

void Lab::add_to(config::Config& cfg) const {
  for (const auto& t : targets_)
    if (!cfg.canary.find(t.name)) cfg.canary.canaries.push_back(t);
}

Lab::~Lab() { teardown(); }

}  // namespace fsaudit::canary
