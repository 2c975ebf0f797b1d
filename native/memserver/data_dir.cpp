// data_dir.cpp — see data_dir.hpp.
#include "memserver/data_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "pd3/status.h"

namespace pd3 {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Reserves the file's blocks so that writing through the mapping never meets a full disk (which
// would be a SIGBUS); file systems without fallocate only get their size set.
int size_file(int fd, uint64_t bytes, const std::string& name) {
  if (fallocate(fd, 0, 0, off_t(bytes)) == 0) return PD3_OK;
  if (errno == ENOSPC) return fail(PD3_E_NOSPACE, "no disk space for %s (%llu bytes)", name.c_str(), (unsigned long long)bytes);
  if (errno != EOPNOTSUPP && errno != ENOSYS)
    return fail(PD3_E_SYS, "fallocate %s: %s", name.c_str(), strerror(errno));
  if (ftruncate(fd, off_t(bytes)) != 0) return fail(PD3_E_SYS, "ftruncate %s: %s", name.c_str(), strerror(errno));
  return PD3_OK;
}

}  // namespace

int DataDir::open(const std::string& path, bool durable, std::unique_ptr<DataDir>* out) {
  if (path.empty()) return fail(PD3_E_INVAL, "empty data_dir");
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(PD3_E_SYS, "mkdir %s: %s", path.c_str(), strerror(errno));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    const int e = errno;
    return fail(e == ENOTDIR ? PD3_E_INVAL : PD3_E_SYS, "open data_dir %s: %s", path.c_str(), strerror(e));
  }
  if (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e == EWOULDBLOCK) return fail(PD3_E_INVAL, "data_dir %s is in use by another memory server", path.c_str());
    return fail(PD3_E_SYS, "flock data_dir %s: %s", path.c_str(), strerror(e));
  }
  std::unique_ptr<DataDir> dir(new DataDir(std::move(fd), path, durable));
  std::vector<std::string> names;
  if (int rc = dir->list(&names); rc != PD3_OK) return rc;
  for (const std::string& name : names) {
    if (!ends_with(name, kTempSuffix)) continue;
    if (unlinkat(dir->fd_.get(), name.c_str(), 0) != 0)
      return fail(PD3_E_SYS, "remove leftover %s/%s: %s", path.c_str(), name.c_str(), strerror(errno));
  }
  *out = std::move(dir);
  return PD3_OK;
}

int DataDir::list(std::vector<std::string>* names) const {
  names->clear();
  // A second descriptor: readdir consumes the position of the one it is given.
  const int fd = openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(PD3_E_SYS, "open data_dir %s: %s", path_.c_str(), strerror(errno));
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    ::close(fd);
    return fail(PD3_E_SYS, "read data_dir %s: %s", path_.c_str(), strerror(e));
  }
  errno = 0;
  while (const dirent* ent = readdir(d)) {
    struct stat st;
    if (fstatat(fd_.get(), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) names->emplace_back(ent->d_name);
    errno = 0;
  }
  const int e = errno;
  closedir(d);
  if (e != 0) return fail(PD3_E_SYS, "read data_dir %s: %s", path_.c_str(), strerror(e));
  return PD3_OK;
}

bool DataDir::exists(const std::string& name) const {
  struct stat st;
  return fstatat(fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int DataDir::create_with(const std::string& name, uint64_t bytes, const std::function<int(int, const std::string&)>& prepare,
                         UniqueFd* out) {
  const std::string temp = name + kTempSuffix;
  unlinkat(fd_.get(), temp.c_str(), 0);  // a leftover of an earlier failed attempt, if any
  UniqueFd fd(openat(fd_.get(), temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    const int e = errno;
    return fail(e == ENOSPC ? PD3_E_NOSPACE : PD3_E_SYS, "create %s/%s: %s", path_.c_str(), temp.c_str(), strerror(e));
  }
  int rc = size_file(fd.get(), bytes, temp);
  if (rc == PD3_OK) rc = prepare(fd.get(), temp);
  if (rc == PD3_OK && durable_ && fsync(fd.get()) != 0)
    rc = fail(PD3_E_SYS, "fsync %s/%s: %s", path_.c_str(), temp.c_str(), strerror(errno));
  if (rc == PD3_OK && renameat(fd_.get(), temp.c_str(), fd_.get(), name.c_str()) != 0)
    rc = fail(PD3_E_SYS, "rename %s to %s in %s: %s", temp.c_str(), name.c_str(), path_.c_str(), strerror(errno));
  if (rc != PD3_OK) {
    unlinkat(fd_.get(), temp.c_str(), 0);
    return rc;
  }
  if (int sync_rc = sync_dir(); sync_rc != PD3_OK) return sync_rc;
  *out = std::move(fd);
  return PD3_OK;
}

int DataDir::create(const std::string& name, uint64_t bytes, const std::function<int(Mapping&)>& fill, Mapping* out,
                    UniqueFd* fd_out) {
  Mapping m;
  UniqueFd fd;
  const int rc = create_with(name, bytes, [&](int file, const std::string&) {
    const int mapped = Mapping::shared_file(file, bytes, &m);
    return mapped == PD3_OK ? fill(m) : mapped;
  }, &fd);
  if (rc != PD3_OK) return rc;
  *out = std::move(m);  // the mapping outlives the descriptor
  if (fd_out != nullptr) *fd_out = std::move(fd);
  return PD3_OK;
}

int DataDir::create_file(const std::string& name, uint64_t bytes, UniqueFd* out) {
  return create_with(name, bytes, [](int, const std::string&) { return PD3_OK; }, out);
}

int DataDir::open_file(const std::string& name, UniqueFd* out, uint64_t* size) {
  UniqueFd fd(openat(fd_.get(), name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return fail(PD3_E_SYS, "open %s/%s: %s", path_.c_str(), name.c_str(), strerror(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return fail(PD3_E_SYS, "stat %s/%s: %s", path_.c_str(), name.c_str(), strerror(errno));
  *size = uint64_t(st.st_size);
  *out = std::move(fd);
  return PD3_OK;
}

int DataDir::map(const std::string& name, uint64_t max_bytes, Mapping* out, uint64_t* size, UniqueFd* fd_out) {
  UniqueFd fd;
  if (int rc = open_file(name, &fd, size); rc != PD3_OK) return rc;
  if (*size == 0 || *size > max_bytes) {
    *out = Mapping{};
    return PD3_OK;
  }
  if (int rc = Mapping::shared_file(fd.get(), *size, out); rc != PD3_OK) return rc;
  if (fd_out != nullptr) *fd_out = std::move(fd);
  return PD3_OK;
}

int DataDir::create_marker(const std::string& name) {
  UniqueFd fd(openat(fd_.get(), name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return fail(PD3_E_SYS, "create %s/%s: %s", path_.c_str(), name.c_str(), strerror(errno));
  return sync_dir();
}

int DataDir::remove(const std::string& name) {
  if (unlinkat(fd_.get(), name.c_str(), 0) != 0)
    return fail(PD3_E_SYS, "remove %s/%s: %s", path_.c_str(), name.c_str(), strerror(errno));
  return sync_dir();
}

int DataDir::sync_dir() {
  if (durable_ && fsync(fd_.get()) != 0) return fail(PD3_E_SYS, "fsync data_dir %s: %s", path_.c_str(), strerror(errno));
  return PD3_OK;
}

}  // namespace pd3
