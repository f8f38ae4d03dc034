//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests --------===//
//
// The driver API calls the runtime resolves (runtime/src/cuda/CudaDriver.h),
// answering as a driver with GPUs would, so that the tests can check the
// runtime's device listing and the host side of a CUDA artifact's runs where
// there is no GPU: run with KILN_CUDA_DRIVER pointing at this library.
//
// Device memory is host memory, so copies are copies; a module is its PTX,
// read for its kernels (`.entry`, with their parameter counts) and globals;
// a launch checks its kernel, grid and parameters, and runs nothing, so the
// outputs are whatever the device buffers held (zeros). What it cannot
// check, the kernels' results, needs a GPU (bench/cuda_check.py).
//
// Set in the environment:
// - KILN_FAKE_CUDA_DEVICES: how many devices it shows (2 by default);
// - KILN_FAKE_CUDA_NO_DEVICE: cuInit fails as a driver without a GPU does;
// - KILN_FAKE_CUDA_CAPABILITY: device 0's compute capability (90 by default);
// - KILN_FAKE_CUDA_REPORT: at exit, print what was called to stderr, with
//   the device buffers and contexts still held (a leak if not 0);
// - KILN_FAKE_CUDA_FAIL_LAUNCH=N: the Nth launch fails (CUDA_ERROR_LAUNCH_FAILED);
// - KILN_FAKE_CUDA_KERNEL_CHECK=N: every launch sets the module's
//   kiln_kernel_check to N, as a kernel whose check N failed would;
// - KILN_FAKE_CUDA_MEMORY=BYTES: the device's memory, past which an
//   allocation fails (CUDA_ERROR_OUT_OF_MEMORY).
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {
constexpr int kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100,
              kInvalidDevice = 101, kInvalidImage = 200, kInvalidContext = 201,
              kInvalidHandle = 400, kNotFound = 500, kLaunchFailed = 719;

int deviceCount() {
  const char *count = std::getenv("KILN_FAKE_CUDA_DEVICES");
  return count ? std::atoi(count) : 2;
}

long long environmentNumber(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::atoll(value) : 0;
}

struct Kernel {
  std::string name;
  size_t parameters = 0;
};

struct Module {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::map<std::string, std::vector<char>> globals;
};

/// What the process did with the fake device, reported at exit.
struct Device {
  std::map<uintptr_t, std::vector<char>> buffers; // by address
  size_t bytesInUse = 0;
  int contextsRetained = 0;
  int current = 0; // contexts made current
  long moduleLoads = 0, launches = 0, allocations = 0, copies = 0;
  std::vector<std::unique_ptr<Module>> modules;

  ~Device() {
    if (!std::getenv("KILN_FAKE_CUDA_REPORT"))
      return;
    std::fprintf(stderr,
                 "fake CUDA driver: %ld module loads, %ld launches, %ld allocations, %ld "
                 "copies; at exit %zu buffers (%zu bytes) and %d contexts still held\n",
                 moduleLoads, launches, allocations, copies, buffers.size(), bytesInUse,
                 contextsRetained);
  }
} device;

/// Whether [address, +bytes) is inside one device buffer, or outside all of
/// them (host memory): a copy that runs off a device buffer is a bug.
bool validRange(uintptr_t address, size_t bytes) {
  auto after = device.buffers.upper_bound(address);
  if (after == device.buffers.begin())
    return true;
  auto buffer = std::prev(after);
  uintptr_t begin = buffer->first, end = begin + buffer->second.size();
  return address >= end || address + bytes <= end;
}

/// Reads a PTX module's kernels and globals.
std::unique_ptr<Module> parsePtx(const char *ptx) {
  auto module = std::make_unique<Module>();
  std::string text(ptx);
  for (size_t at = text.find(".entry "); at != std::string::npos;
       at = text.find(".entry ", at + 1)) {
    size_t name = at + 7, open = text.find('(', name), close = text.find(')', open);
    if (open == std::string::npos || close == std::string::npos)
      return nullptr;
    auto kernel = std::make_unique<Kernel>();
    kernel->name = text.substr(name, open - name);
    while (!kernel->name.empty() && kernel->name.back() == ' ')
      kernel->name.pop_back();
    for (size_t param = text.find(".param", open); param < close;
         param = text.find(".param", param + 1))
      ++kernel->parameters;
    module->kernels.push_back(std::move(kernel));
  }
  // ".global .align 4 .b32 kiln_kernel_check;" and the like: the element
  // width, the name, and an optional [count].
  for (size_t at = text.find(".global "); at != std::string::npos;
       at = text.find(".global ", at + 1)) {
    size_t end = text.find_first_of(";=", at);
    std::string declaration = text.substr(at, end - at);
    size_t width = 4;
    for (auto [type, bytes] : {std::pair(".b8 ", 1), std::pair(".u8 ", 1), std::pair(".b16 ", 2),
                               std::pair(".b64 ", 8), std::pair(".u64 ", 8), std::pair(".f64 ", 8)})
      if (declaration.find(type) != std::string::npos)
        width = bytes;
    while (!declaration.empty() && declaration.back() == ' ')
      declaration.pop_back();
    size_t count = 1, bracket = declaration.find('[');
    if (bracket != std::string::npos) {
      count = std::strtoull(declaration.c_str() + bracket + 1, nullptr, 10);
      declaration.resize(bracket);
    }
    std::string name = declaration.substr(declaration.find_last_of(' ') + 1);
    module->globals[name].assign(width * count, 0);
  }
  return module;
}

Module *findModule(void *handle) {
  for (auto &module : device.modules)
    if (module.get() == handle)
      return module.get();
  return nullptr;
}

Kernel *findKernel(void *handle) {
  for (auto &module : device.modules)
    for (auto &kernel : module->kernels)
      if (kernel.get() == handle)
        return kernel.get();
  return nullptr;
}

int streamHandle; // every stream is this one: the fake runs nothing out of order
int contextHandle;
int memoryPoolHandle;
} // namespace

extern "C" {

int cuInit(unsigned flags) {
  return flags != 0 ? kInvalidValue : std::getenv("KILN_FAKE_CUDA_NO_DEVICE") ? kNoDevice : kSuccess;
}

int cuDeviceGetCount(int *count) {
  *count = deviceCount();
  return kSuccess;
}

int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount())
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

int cuDeviceGetName(char *name, int length, int device) {
  std::snprintf(name, length, "Fake GPU %d", device);
  return kSuccess;
}

// Device 0 is an sm_90 (an H100's), or what KILN_FAKE_CUDA_CAPABILITY
// says (80 for an sm_80); the others sm_80.
int cuDeviceGetAttribute(int *value, int attribute, int device) {
  long long capability = environmentNumber("KILN_FAKE_CUDA_CAPABILITY");
  if (attribute == 75) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    *value = device != 0 ? 8 : capability ? int(capability / 10) : 9;
  else if (attribute == 76) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
    *value = device == 0 && capability ? int(capability % 10) : 0;
  else
    return kInvalidValue;
  return kSuccess;
}

int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  *bytes = size_t(80) << 30;
  return kSuccess;
}

namespace {
struct ErrorText {
  int error;
  const char *name, *text;
};
constexpr ErrorText kErrors[] = {
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNoDevice, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidContext, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};
const ErrorText *errorText(int error) {
  for (const ErrorText &entry : kErrors)
    if (entry.error == error)
      return &entry;
  return nullptr;
}
} // namespace

int cuGetErrorName(int error, const char **name) {
  const ErrorText *entry = errorText(error);
  *name = entry ? entry->name : "CUDA_ERROR_UNKNOWN";
  return kSuccess;
}

int cuGetErrorString(int error, const char **text) {
  const ErrorText *entry = errorText(error);
  *text = entry ? entry->text : "unknown error";
  return kSuccess;
}

int cuDevicePrimaryCtxRetain(void **context, int device_) {
  if (device_ < 0 || device_ >= deviceCount())
    return kInvalidDevice;
  ++device.contextsRetained;
  *context = &contextHandle;
  return kSuccess;
}

int cuDevicePrimaryCtxRelease_v2(int) {
  if (device.contextsRetained == 0)
    return kInvalidContext;
  --device.contextsRetained;
  return kSuccess;
}

int cuCtxSetCurrent(void *context) {
  if (context != &contextHandle || device.contextsRetained == 0)
    return kInvalidContext;
  ++device.current;
  return kSuccess;
}

int cuStreamCreate(void **stream, unsigned) {
  *stream = &streamHandle;
  return device.current ? kSuccess : kInvalidContext;
}

int cuStreamDestroy_v2(void *stream) { return stream == &streamHandle ? kSuccess : kInvalidHandle; }

int cuStreamSynchronize(void *stream) {
  return stream == &streamHandle ? kSuccess : kInvalidHandle;
}

int cuMemAlloc_v2(uint64_t *address, size_t bytes) {
  long long limit = environmentNumber("KILN_FAKE_CUDA_MEMORY");
  if (bytes == 0)
    return kInvalidValue;
  if (limit > 0 && device.bytesInUse + bytes > size_t(limit))
    return kOutOfMemory;
  std::vector<char> buffer(bytes, 0);
  uintptr_t at = reinterpret_cast<uintptr_t>(buffer.data());
  device.buffers.emplace(at, std::move(buffer));
  device.bytesInUse += bytes;
  ++device.allocations;
  *address = at;
  return kSuccess;
}

int cuMemFree_v2(uint64_t address) {
  auto buffer = device.buffers.find(address);
  if (buffer == device.buffers.end())
    return kInvalidValue;
  device.bytesInUse -= buffer->second.size();
  device.buffers.erase(buffer);
  return kSuccess;
}

int cuDeviceGetDefaultMemPool(void **pool, int device_) {
  if (device_ < 0 || device_ >= deviceCount())
    return kInvalidDevice;
  *pool = &memoryPoolHandle;
  return kSuccess;
}

// The fake's pool keeps nothing, so what it is told to keep changes nothing;
// the attribute must still be one the driver knows (1 to 8).
int cuMemPoolSetAttribute(void *pool, int attribute, void *value) {
  return pool != &memoryPoolHandle ? kInvalidHandle
         : attribute < 1 || attribute > 8 || !value ? kInvalidValue
                                                   : kSuccess;
}

int cuMemAllocAsync(uint64_t *address, size_t bytes, void *stream) {
  return stream != &streamHandle ? kInvalidHandle : cuMemAlloc_v2(address, bytes);
}

int cuMemFreeAsync(uint64_t address, void *stream) {
  return stream != &streamHandle ? kInvalidHandle : cuMemFree_v2(address);
}

int cuMemcpyAsync(uint64_t destination, uint64_t source, size_t bytes, void *stream) {
  if (stream != &streamHandle)
    return kInvalidHandle;
  if (!validRange(destination, bytes) || !validRange(source, bytes))
    return kInvalidValue;
  std::memcpy(reinterpret_cast<void *>(destination), reinterpret_cast<void *>(source), bytes);
  ++device.copies;
  return kSuccess;
}

int cuMemsetD32Async(uint64_t destination, unsigned value, size_t count, void *stream) {
  if (stream != &streamHandle)
    return kInvalidHandle;
  auto *words = reinterpret_cast<uint32_t *>(destination);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return kSuccess;
}

int cuModuleLoadData(void **module, const void *image) {
  if (!device.current)
    return kInvalidContext;
  std::unique_ptr<Module> parsed = parsePtx(static_cast<const char *>(image));
  if (!parsed || std::strncmp(static_cast<const char *>(image), "//", 2) != 0)
    return kInvalidImage; // PTX starts with its generator's comment
  *module = parsed.get();
  device.modules.push_back(std::move(parsed));
  ++device.moduleLoads;
  return kSuccess;
}

int cuModuleUnload(void *module) {
  for (auto it = device.modules.begin(); it != device.modules.end(); ++it)
    if (it->get() == module) {
      device.modules.erase(it);
      return kSuccess;
    }
  return kInvalidHandle;
}

int cuModuleGetFunction(void **function, void *module, const char *name) {
  Module *found = findModule(module);
  if (!found)
    return kInvalidHandle;
  for (auto &kernel : found->kernels)
    if (kernel->name == name) {
      *function = kernel.get();
      return kSuccess;
    }
  return kNotFound;
}

int cuModuleGetGlobal_v2(uint64_t *address, size_t *bytes, void *module, const char *name) {
  Module *found = findModule(module);
  if (!found)
    return kInvalidHandle;
  auto global = found->globals.find(name);
  if (global == found->globals.end())
    return kNotFound;
  *address = reinterpret_cast<uintptr_t>(global->second.data());
  *bytes = global->second.size();
  return kSuccess;
}

int cuLaunchKernel(void *function, unsigned gridX, unsigned gridY, unsigned gridZ,
                   unsigned blockX, unsigned blockY, unsigned blockZ, unsigned, void *stream,
                   void **parameters, void **extra) {
  Kernel *kernel = findKernel(function);
  if (!kernel || stream != &streamHandle)
    return kInvalidHandle;
  if (!gridX || !gridY || !gridZ || !blockX || !blockY || !blockZ ||
      uint64_t(blockX) * blockY * blockZ > 1024 || extra)
    return kInvalidValue;
  for (size_t i = 0; i < kernel->parameters; ++i)
    if (!parameters || !parameters[i])
      return kInvalidValue;
  ++device.launches;
  if (device.launches == environmentNumber("KILN_FAKE_CUDA_FAIL_LAUNCH"))
    return kLaunchFailed;
  if (long long check = environmentNumber("KILN_FAKE_CUDA_KERNEL_CHECK"))
    for (auto &module : device.modules) {
      auto flag = module->globals.find("kiln_kernel_check");
      if (flag != module->globals.end())
        *reinterpret_cast<int32_t *>(flag->second.data()) = int32_t(check);
    }
  return kSuccess;
}

} // extern "C"
