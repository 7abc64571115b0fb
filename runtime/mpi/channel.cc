#include "runtime/mpi/channel.h"

#include <algorithm>
#include <string>
#include <thread>

#include "core/check.h"
#include "runtime/mpi/transport.h"

namespace bagua::runtime::mpi {

namespace {

// The largest piece of one message: well below INT_MAX bytes, MPI's count limit.
constexpr int64_t kPieceBytes = int64_t{1} << 30;

void wait_polling(MPI_Request& request, MPI_Status* status) {
  for (;;) {
    int done = 0;
    BAGUA_MPI_CHECK(MPI_Test(&request, &done, status));
    if (done) return;
    std::this_thread::sleep_for(MpiChannel::kPollInterval);
  }
}

}  // namespace

MpiChannel::MpiChannel(MPI_Comm comm) {
  BAGUA_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  BAGUA_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  BAGUA_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  MPI_Comm node = MPI_COMM_NULL;
  BAGUA_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  BAGUA_MPI_CHECK(MPI_Comm_size(node, &local_size_));
  BAGUA_MPI_CHECK(MPI_Comm_free(&node));
}

MpiChannel::~MpiChannel() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

// A message is its length (one int64) and then its bytes in pieces of at most kPieceBytes, all with
// the message's tag: MPI keeps them in order between one pair on one tag.
void MpiChannel::send(std::span<const uint8_t> bytes, int dst, int tag) {
  BAGUA_CHECK(dst >= 0 && dst < size_ && dst != rank_,
              "channel: rank " + std::to_string(rank_) + " cannot send to rank " + std::to_string(dst));
  int64_t length = static_cast<int64_t>(bytes.size());
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(MPI_Isend(&length, 1, MPI_INT64_T, dst, tag, comm_, &request));
  wait_polling(request, MPI_STATUS_IGNORE);
  for (int64_t at = 0; at < length; at += kPieceBytes) {
    const int count = static_cast<int>(std::min(kPieceBytes, length - at));
    BAGUA_MPI_CHECK(MPI_Isend(bytes.data() + at, count, MPI_BYTE, dst, tag, comm_, &request));
    wait_polling(request, MPI_STATUS_IGNORE);
  }
}

std::vector<uint8_t> MpiChannel::receive(int src, int tag) {
  BAGUA_CHECK(
      src >= 0 && src < size_ && src != rank_,
      "channel: rank " + std::to_string(rank_) + " cannot receive from rank " + std::to_string(src));
  int64_t length = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  BAGUA_MPI_CHECK(MPI_Irecv(&length, 1, MPI_INT64_T, src, tag, comm_, &request));
  wait_polling(request, MPI_STATUS_IGNORE);
  BAGUA_CHECK(length >= 0, "channel: a message of negative length " + std::to_string(length));
  std::vector<uint8_t> bytes(static_cast<size_t>(length));
  for (int64_t at = 0; at < length; at += kPieceBytes) {
    const int count = static_cast<int>(std::min(kPieceBytes, length - at));
    BAGUA_MPI_CHECK(MPI_Irecv(bytes.data() + at, count, MPI_BYTE, src, tag, comm_, &request));
    MPI_Status status;
    wait_polling(request, &status);
    int received = 0;
    BAGUA_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &received));
    BAGUA_CHECK_EQ(received, count, "channel: a piece of a message from rank " + std::to_string(src));
  }
  return bytes;
}

}  // namespace bagua::runtime::mpi
