#include "core/operation.h"

namespace bagua {

namespace {
thread_local const char* t_operation = nullptr;
}  // namespace

OperationScope::OperationScope(const char* operation) : outermost_(t_operation == nullptr) {
  if (outermost_) t_operation = operation;
}

OperationScope::~OperationScope() {
  if (outermost_) t_operation = nullptr;
}

const char* current_operation() {
  return t_operation;
}

}  // namespace bagua
