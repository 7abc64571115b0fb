// IDX files, the format of MNIST and Fashion-MNIST (LeCun et al., "THE MNIST DATABASE of handwritten
// digits", yann.lecun.com/exdb/mnist, section "FILE FORMATS FOR THE MNIST DATABASE"), read through
// zlib's gzip layer (gzopen/gzread: a plain, uncompressed file reads the same).
//
// Terms:
//   magic    4 bytes: 0, 0, the element type (0x08 = unsigned byte, the only one accepted here) and the
//            number of dimensions d
//   dims     d big-endian uint32 sizes (images: count, rows, columns; labels: count)
//   data     the product of the dims, in bytes, row-major
//
// Every failure is a ConfigError naming the file: missing or unreadable, not gzip or IDX (wrong magic),
// another element type or number of dimensions than expected, truncated (fewer data bytes than the
// dims promise) or trailing bytes after the data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bagua {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // product of dims bytes
};

// Reads the unsigned-byte IDX file at `path` (gzip-compressed or not), which must have
// `expected_dims` dimensions.
IdxArray read_idx(const std::string& path, int expected_dims);

}  // namespace bagua
