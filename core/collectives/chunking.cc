#include <string>

#include "core/check.h"
#include "core/collectives/collectives.h"

namespace bagua::collectives {

ChunkRange chunk_range(size_t count, int parts, int i) {
  BAGUA_CHECK(parts >= 1, "chunk_range: parts = " + std::to_string(parts));
  BAGUA_CHECK(i >= 0 && i < parts,
              "chunk_range: chunk " + std::to_string(i) + " of " + std::to_string(parts));
  const size_t n = static_cast<size_t>(parts);
  return chunk_range_of(count / n, count % n, static_cast<size_t>(i));
}

Chunking::Chunking(const BufferView& data, int parts) : data_(data), parts_(parts) {
  BAGUA_CHECK(parts >= 1, "Chunking: parts = " + std::to_string(parts));
  base_ = data.count() / static_cast<size_t>(parts);
  larger_ = data.count() % static_cast<size_t>(parts);
}

void Chunking::out_of_range(int i) const {
  chunk_range(data_.count(), parts_, i);  // throws its error for chunk i
}

BufferView Chunking::chunks(int first, int n) const {
  BAGUA_CHECK(n >= 1 && first >= 0 && first + n <= parts_,
              "Chunking::chunks [" + std::to_string(first) + ", +" + std::to_string(n) + ") of " +
                  std::to_string(parts_));
  const size_t begin = range(first).offset;
  const size_t end = range(first + n - 1).end();
  return data_.slice(begin, end - begin);
}

size_t Chunking::max_count() const {
  return range(0).count;
}

}  // namespace bagua::collectives
