// vramkit's allocator functions for PyTorch's CUDAPluggableAllocator.
//
// PyTorch hands the pointer an allocator function returns to its kernels without
// checking it for NULL, so a refused request must not come back as NULL: these
// functions call vramkit_malloc / vramkit_free of the vramkit library and turn a
// refusal into c10::OutOfMemoryError carrying vramkit's message, which PyTorch
// raises in Python as torch.OutOfMemoryError.
//
// vramkit.torch builds this file with torch.utils.cpp_extension.load and binds it to
// the library that the vramkit package loaded (vramkit_torch_shim_bind), so both use
// the same allocator state.

#include <c10/util/Exception.h>

#include <dlfcn.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>

namespace {

using MallocFn = void* (*)(ssize_t, int, void*);
using FreeFn = void (*)(void*, ssize_t, int, void*);
using LastErrorFn = size_t (*)(char*, size_t);

std::atomic<MallocFn> vk_malloc{nullptr};
std::atomic<FreeFn> vk_free{nullptr};
std::atomic<LastErrorFn> vk_last_error{nullptr};

// This thread's last vramkit error message.
std::string last_error_text() {
  LastErrorFn read = vk_last_error.load(std::memory_order_acquire);
  std::string text(256, '\0');
  size_t n = read(&text[0], text.size());
  if (n >= text.size()) {
    text.assign(n + 1, '\0');
    n = read(&text[0], text.size());
  }
  text.resize(std::min(n, text.size() - 1));
  if (text.empty()) {
    text = "vramkit refused the allocation and gave no message";
  }
  return text;
}

}  // namespace

extern "C" {

// Binds the shim to the vramkit library at library_path (already loaded by the
// vramkit package). Returns NULL on success, else a message saying what failed.
const char* vramkit_torch_shim_bind(const char* library_path) {
  static thread_local std::string error;
  void* handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    error = std::string("dlopen failed: ") + (why != nullptr ? why : "unknown error");
    return error.c_str();
  }
  void* m = dlsym(handle, "vramkit_malloc");
  void* f = dlsym(handle, "vramkit_free");
  void* e = dlsym(handle, "vramkit_last_error");
  if (m == nullptr || f == nullptr || e == nullptr) {
    error = std::string(library_path) +
            " lacks vramkit_malloc, vramkit_free or vramkit_last_error";
    return error.c_str();
  }
  vk_last_error.store(reinterpret_cast<LastErrorFn>(e), std::memory_order_release);
  vk_free.store(reinterpret_cast<FreeFn>(f), std::memory_order_release);
  vk_malloc.store(reinterpret_cast<MallocFn>(m), std::memory_order_release);
  return nullptr;
}

// vramkit_malloc that throws c10::OutOfMemoryError instead of returning NULL.
void* vramkit_torch_malloc(ssize_t size, int device, void* stream) {
  MallocFn m = vk_malloc.load(std::memory_order_acquire);
  TORCH_CHECK(
      m != nullptr,
      "vramkit's PyTorch allocator is not bound to the vramkit library; "
      "install it with vramkit.torch.enable()");
  void* ptr = m(size, device, stream);
  if (ptr == nullptr && size != 0) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, last_error_text());
  }
  return ptr;
}

// vramkit_free; never throws (PyTorch calls it from deleters).
void vramkit_torch_free(void* ptr, ssize_t size, int device, void* stream) {
  FreeFn f = vk_free.load(std::memory_order_acquire);
  if (f != nullptr) {
    f(ptr, size, device, stream);
  }
}

}  // extern "C"
