// data_dir.hpp — the directory of a persistent memory server: held open and locked for the store's
// lifetime; files in it are created complete or not at all (temporary name, then rename).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memserver/mapping.hpp"
#include "common/unique_fd.hpp"

namespace pd3 {

// Suffix of files being built; open() deletes leftovers, they never count as real files.
inline constexpr const char* kTempSuffix = ".tmp";

// A locked data directory and the file operations the store needs.
class DataDir {
 public:
  // Opens `path` (creating the last component if missing), takes an exclusive lock on it so that
  // two servers never share it, and deletes leftover temporary files. With `durable`, file
  // creation, renames and removals are made durable (fsync of the file and the directory).
  // Returns PD3_OK, PD3_E_INVAL (not a directory, or locked by another process) or PD3_E_SYS.
  static int open(const std::string& path, bool durable, std::unique_ptr<DataDir>* out);

  // Names of the regular files in the directory. Returns PD3_OK or PD3_E_SYS.
  int list(std::vector<std::string>* names) const;
  bool exists(const std::string& name) const;

  // Creates `name` with `bytes` bytes (disk space reserved where the file system can) under a
  // temporary name, maps it shared, lets `fill` write its first contents, then renames it into
  // place, replacing any older file of that name: a crash leaves the old file or the complete new
  // one (with `durable`, the contents are fsync-ed before the rename). With `fd_out`, the file's
  // descriptor is kept there (to fdatasync what is later written through the mapping). Returns
  // PD3_OK, PD3_E_NOSPACE (disk full), PD3_E_SYS, or what `fill` returned.
  int create(const std::string& name, uint64_t bytes, const std::function<int(Mapping&)>& fill, Mapping* out,
             UniqueFd* fd_out = nullptr);
  // Sets *size to the size of an existing file and maps it whole (shared) if 0 < size ≤ max_bytes;
  // otherwise *out is left empty, for the caller to refuse. With `fd_out`, the descriptor is kept
  // there. Returns PD3_OK or PD3_E_SYS.
  int map(const std::string& name, uint64_t max_bytes, Mapping* out, uint64_t* size, UniqueFd* fd_out = nullptr);
  // The same as create() for a file used through a descriptor (the SSD tier): `bytes` zero bytes,
  // reserved, renamed into place; *out is its read/write descriptor. Returns PD3_OK,
  // PD3_E_NOSPACE or PD3_E_SYS.
  [[nodiscard]] int create_file(const std::string& name, uint64_t bytes, UniqueFd* out);
  // Opens an existing file read/write and sets *size to its size. Returns PD3_OK or PD3_E_SYS.
  [[nodiscard]] int open_file(const std::string& name, UniqueFd* out, uint64_t* size);
  // Deletes a file. Returns PD3_OK or PD3_E_SYS.
  int remove(const std::string& name);
  // Creates the empty file `name` (a marker whose presence is the information), durably with
  // `durable`. Returns PD3_OK (also when it exists) or PD3_E_SYS.
  int create_marker(const std::string& name);

  const std::string& path() const { return path_; }
  bool durable() const { return durable_; }

 private:
  DataDir(UniqueFd fd, std::string path, bool durable) : fd_(std::move(fd)), path_(std::move(path)), durable_(durable) {}
  int sync_dir();
  // The creation both create() and create_file() make: a temporary file of `bytes` reserved bytes,
  // `prepare(fd, temp name)`, fsync (durable), rename into place, directory sync.
  int create_with(const std::string& name, uint64_t bytes, const std::function<int(int, const std::string&)>& prepare,
                  UniqueFd* out);

  UniqueFd fd_;
  std::string path_;
  bool durable_;
};

}  // namespace pd3
