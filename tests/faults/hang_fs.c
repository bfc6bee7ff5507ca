// A FUSE filesystem whose statfs and fsync never return until released: the "dead NFS server / dying
// disk" of the fault tests. Usage: fsaudit-hang-fs [--statfs-answers] MOUNTPOINT [BACKING_FILE]
// (foreground, multithreaded). SIGUSR1 releases every blocked and future call (they then succeed);
// umount or SIGTERM ends it. With --statfs-answers only fsync blocks (statfs reports a 4 GiB
// filesystem, half free), so a writer gets as far as its fsync.
// Everything else (getattr, readdir, create, write, unlink, mkdir) answers at once from an in-memory table.
// With BACKING_FILE, /disk.img reads and writes that file (a loop device can sit on it), and after
// SIGUSR2 every read, write and fsync of it fails with EIO: a disk that died under a filesystem.
#define FUSE_USE_VERSION 31
#include <fuse3/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAX_FILES 64
static char names[MAX_FILES][256];
static off_t sizes[MAX_FILES];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int released;
static atomic_int blocked_calls;
static atomic_int failing;
static int backing_fd = -1;
static const char* disk = "/disk.img";
static int statfs_answers;
static char dirs[8][256];

static void on_usr2(int sig) {
  (void)sig;
  atomic_store(&failing, 1);
}

static void on_usr1(int sig) {
  (void)sig;
  atomic_store(&released, 1);
}

static void block_until_released(void) {
  atomic_fetch_add(&blocked_calls, 1);
  while (!atomic_load(&released)) usleep(50 * 1000);
}

static int find(const char* path) {
  for (int i = 0; i < MAX_FILES; ++i)
    if (names[i][0] && strcmp(names[i], path) == 0) return i;
  return -1;
}

static int hang_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  memset(st, 0, sizeof *st);
  if (strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  pthread_mutex_lock(&mu);
  for (int d = 0; d < 8; ++d)
    if (dirs[d][0] && strcmp(dirs[d], path) == 0) {
      st->st_mode = S_IFDIR | 0700;
      st->st_nlink = 2;
      pthread_mutex_unlock(&mu);
      return 0;
    }
  int i = find(path);
  if (i >= 0) {
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_size = sizes[i];
  }
  pthread_mutex_unlock(&mu);
  return i >= 0 ? 0 : -ENOENT;
}

static int hang_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info* fi,
                        enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  if (strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", NULL, 0, 0);
  fill(buf, "..", NULL, 0, 0);
  pthread_mutex_lock(&mu);
  for (int i = 0; i < MAX_FILES; ++i)
    if (names[i][0]) fill(buf, names[i] + 1, NULL, 0, 0);
  pthread_mutex_unlock(&mu);
  return 0;
}

static int hang_create(const char* path, mode_t mode, struct fuse_file_info* fi) {
  (void)mode, (void)fi;
  if (strlen(path) >= sizeof names[0]) return -ENAMETOOLONG;
  pthread_mutex_lock(&mu);
  int i = find(path);
  for (int j = 0; i < 0 && j < MAX_FILES; ++j)
    if (!names[j][0]) {
      strcpy(names[j], path);
      sizes[j] = 0;
      i = j;
    }
  pthread_mutex_unlock(&mu);
  return i >= 0 ? 0 : -ENOSPC;
}

static int hang_mkdir(const char* path, mode_t mode) {
  (void)mode;
  if (strlen(path) >= sizeof dirs[0]) return -ENAMETOOLONG;
  pthread_mutex_lock(&mu);
  int free_slot = -1, exists = 0;
  for (int d = 0; d < 8; ++d) {
    if (dirs[d][0] && strcmp(dirs[d], path) == 0) exists = 1;
    if (!dirs[d][0] && free_slot < 0) free_slot = d;
  }
  if (!exists && free_slot >= 0) strcpy(dirs[free_slot], path);
  pthread_mutex_unlock(&mu);
  return exists ? -EEXIST : free_slot < 0 ? -ENOSPC : 0;
}

static int hang_rmdir(const char* path) {
  pthread_mutex_lock(&mu);
  int found = 0;
  for (int d = 0; d < 8; ++d)
    if (dirs[d][0] && strcmp(dirs[d], path) == 0) dirs[d][0] = 0, found = 1;
  pthread_mutex_unlock(&mu);
  return found ? 0 : -ENOENT;
}

static int hang_open(const char* path, struct fuse_file_info* fi) {
  (void)fi;
  pthread_mutex_lock(&mu);
  int i = find(path);
  pthread_mutex_unlock(&mu);
  return i >= 0 ? 0 : -ENOENT;
}

static int is_disk(const char* path) { return backing_fd >= 0 && strcmp(path, disk) == 0; }

static int hang_read(const char* path, char* buf, size_t n, off_t off, struct fuse_file_info* fi) {
  (void)fi;
  if (is_disk(path)) {
    if (atomic_load(&failing)) return -EIO;
    ssize_t r = pread(backing_fd, buf, n, off);
    return r < 0 ? -errno : (int)r;
  }
  memset(buf, 0, n);
  return (int)n;
}

static int hang_write(const char* path, const char* buf, size_t n, off_t off, struct fuse_file_info* fi) {
  (void)fi;
  if (is_disk(path)) {
    if (atomic_load(&failing)) return -EIO;
    ssize_t r = pwrite(backing_fd, buf, n, off);
    return r < 0 ? -errno : (int)r;
  }
  pthread_mutex_lock(&mu);
  int i = find(path);
  if (i >= 0 && off + (off_t)n > sizes[i]) sizes[i] = off + (off_t)n;
  pthread_mutex_unlock(&mu);
  return i >= 0 ? (int)n : -ENOENT;
}

static int hang_truncate(const char* path, off_t size, struct fuse_file_info* fi) {
  (void)fi;
  pthread_mutex_lock(&mu);
  int i = find(path);
  if (i >= 0) sizes[i] = size;
  pthread_mutex_unlock(&mu);
  return i >= 0 ? 0 : -ENOENT;
}

static int hang_unlink(const char* path) {
  pthread_mutex_lock(&mu);
  int i = find(path);
  if (i >= 0) names[i][0] = 0;
  pthread_mutex_unlock(&mu);
  return i >= 0 ? 0 : -ENOENT;
}

static int hang_statfs(const char* path, struct statvfs* st) {
  (void)path;
  if (backing_fd < 0 && !statfs_answers) block_until_released();  // a failing disk fails, it does not hang
  memset(st, 0, sizeof *st);
  st->f_bsize = st->f_frsize = 4096;
  st->f_blocks = statfs_answers ? 1 << 20 : 1024;
  st->f_bfree = st->f_bavail = st->f_blocks / 2;
  st->f_namemax = 255;
  return 0;
}

static int hang_fsync(const char* path, int datasync, struct fuse_file_info* fi) {
  (void)datasync, (void)fi;
  if (is_disk(path)) return atomic_load(&failing) ? -EIO : (fdatasync(backing_fd) < 0 ? -errno : 0);
  block_until_released();
  return 0;
}

static const struct fuse_operations ops = {
    .getattr = hang_getattr,
    .mkdir = hang_mkdir,
    .rmdir = hang_rmdir,
    .unlink = hang_unlink,
    .truncate = hang_truncate,
    .open = hang_open,
    .read = hang_read,
    .write = hang_write,
    .statfs = hang_statfs,
    .fsync = hang_fsync,
    .readdir = hang_readdir,
    .create = hang_create,
};

int main(int argc, char** argv) {
  const char* prog = argv[0];
  if (argc > 1 && strcmp(argv[1], "--statfs-answers") == 0) {
    statfs_answers = 1;
    --argc;
    ++argv;
  }
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s [--statfs-answers] MOUNTPOINT [BACKING_FILE]\n", prog);
    return 2;
  }
  if (argc == 3) {
    backing_fd = open(argv[2], O_RDWR | O_CLOEXEC);
    if (backing_fd < 0) {
      perror(argv[2]);
      return 1;
    }
    struct stat st;
    fstat(backing_fd, &st);
    strcpy(names[0], disk);
    sizes[0] = st.st_size;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, NULL);
  sa.sa_handler = on_usr2;
  sigaction(SIGUSR2, &sa, NULL);
  // -f foreground, multithreaded (the default) so one blocked call does not block getattr.
  char* args[] = {(char*)prog, "-f", "-o", "fsname=fsaudit-hang,subtype=fsaudit_hang", argv[1], NULL};
  return fuse_main(5, args, &ops, NULL);
}
