// The operation a thread is in: a label that collectives set for their duration, so that a real
// runtime's watchdog can say what a stuck wait belongs to (a transport sees only the peer and the tag).
//
// Terms:
//   operation  what an algorithm asked the network for: "allreduce", "hierarchical allreduce",
//              "broadcast", ... (a string literal, never freed)
//   scope      an OperationScope alive on this thread; scopes nest (a hierarchical allreduce runs an
//              intra-host reduce, an allreduce among the leaders and an intra-host broadcast), and the
//              outermost one names the operation, the one the algorithm called
//
// The label is thread-local: a rank's compute stream and communication stream (core/context.h) each
// have their own. Setting it costs two thread-local stores per operation, on every runtime.
#pragma once

namespace bagua {

class OperationScope {
 public:
  // `operation` must outlive the scope (a string literal).
  explicit OperationScope(const char* operation);
  ~OperationScope();
  OperationScope(const OperationScope&) = delete;
  OperationScope& operator=(const OperationScope&) = delete;

 private:
  bool outermost_;
};

// This thread's operation, or nullptr outside every scope.
const char* current_operation();

}  // namespace bagua
