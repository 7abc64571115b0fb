#include "core/models/idx.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <type_traits>

#include "core/check.h"

namespace bagua {

namespace {

constexpr uint8_t kUnsignedByte = 0x08;  // IDX type code of unsigned byte data
constexpr int kMaxDims = 4;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly `n` bytes into `out`; the number read (fewer at end of file).
int64_t read_bytes(gzFile f, uint8_t* out, int64_t n, const std::string& path) {
  int64_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(n - done, int64_t{1} << 30));
    const int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(f, &code);
      // zlib reports a gzip stream cut short as Z_BUF_ERROR ("unexpected end of file").
      if (code == Z_BUF_ERROR)
        throw ConfigError("IDX file '" + path + "': truncated (the gzip stream ends early)");
      throw ConfigError("IDX file '" + path + "': read error (" + (message ? message : "zlib") + ")");
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

}  // namespace

IdxArray read_idx(const std::string& path, int expected_dims) {
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file)
    throw ConfigError("IDX file '" + path +
                      "': cannot open it (Fashion-MNIST: install Debian's dataset-fashion-mnist, "
                      "scripts/setup does)");
  uint8_t magic[4];
  if (read_bytes(file.get(), magic, 4, path) != 4)
    throw ConfigError("IDX file '" + path + "': truncated (shorter than its 4-byte magic number)");
  if (magic[0] != 0 || magic[1] != 0 || magic[3] < 1 || magic[3] > kMaxDims)
    throw ConfigError("IDX file '" + path + "': not an IDX file (magic bytes " +
                      std::to_string(magic[0]) + " " + std::to_string(magic[1]) + " " +
                      std::to_string(magic[2]) + " " + std::to_string(magic[3]) + ")");
  if (magic[2] != kUnsignedByte)
    throw ConfigError("IDX file '" + path + "': element type " + std::to_string(magic[2]) +
                      ", expected 8 (unsigned byte)");
  if (magic[3] != expected_dims)
    throw ConfigError("IDX file '" + path + "': " + std::to_string(magic[3]) +
                      " dimensions, expected " + std::to_string(expected_dims));

  IdxArray a;
  int64_t total = 1;
  for (int d = 0; d < expected_dims; ++d) {
    uint8_t be[4];
    if (read_bytes(file.get(), be, 4, path) != 4)
      throw ConfigError("IDX file '" + path + "': truncated in its header (dimension " +
                        std::to_string(d) + ")");
    const int64_t size =
        (int64_t{be[0]} << 24) | (int64_t{be[1]} << 16) | (int64_t{be[2]} << 8) | be[3];
    a.dims.push_back(size);
    total *= size;
    if (total > (int64_t{1} << 34))
      throw ConfigError("IDX file '" + path + "': implausible size (over 16 GiB of data)");
  }
  a.data.resize(static_cast<size_t>(total));
  const int64_t got = read_bytes(file.get(), a.data.data(), total, path);
  if (got != total)
    throw ConfigError("IDX file '" + path + "': truncated: " + std::to_string(got) + " data bytes of " +
                      std::to_string(total));
  uint8_t extra;
  if (read_bytes(file.get(), &extra, 1, path) != 0)
    throw ConfigError("IDX file '" + path + "': trailing bytes after its " + std::to_string(total) +
                      " data bytes");
  return a;
}

}  // namespace bagua
