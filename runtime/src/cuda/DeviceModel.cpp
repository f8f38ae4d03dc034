//===- DeviceModel.cpp - A CUDA artifact on a GPU -------------------------===//
#include "runtime/src/cuda/DeviceModel.h"
#include "runtime/src/Artifact.h"
#include "kiln/abi/artifact_format.h"
#include "runtime/src/BufferPool.h"
#include "runtime/src/Status.h"

#include <cctype>
#include <map>
#include <cstdint>

namespace kiln::rt::cuda {
namespace {

constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING
constexpr Driver::Result kOutOfMemory = 2;   // CUDA_ERROR_OUT_OF_MEMORY
constexpr Driver::Result kNotFound = 500;    // CUDA_ERROR_NOT_FOUND
constexpr int kReleaseThreshold = 4;         // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD

thread_local DeviceRun *currentRun = nullptr;

/// Makes `run` current on this thread for its scope.
class ScopedDeviceRun {
public:
  explicit ScopedDeviceRun(DeviceRun *run) : outer_(currentRun) { currentRun = run; }
  ~ScopedDeviceRun() { currentRun = outer_; }

private:
  DeviceRun *outer_;
};

/// "sm_90a" → 90; -1 for a name that is not sm_<digits>.
int computeCapability(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    return -1;
  int value = 0;
  for (size_t i = 3; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
    value = value * 10 + (arch[i] - '0');
  return value;
}

Driver::DevicePointer address(const void *pointer) {
  return reinterpret_cast<Driver::DevicePointer>(pointer);
}

/// Where each weight starts in the device's copy: as on the host, aligned
/// for every dtype.
constexpr uint64_t kWeightAlignment = 256;

} // namespace

DeviceRun *DeviceRun::current() { return currentRun; }

kiln_status_code_t statusCode(Driver::Result result) {
  return result == kOutOfMemory ? KILN_STATUS_RESOURCE_EXHAUSTED : KILN_STATUS_INTERNAL;
}

kiln_status_t DeviceModel::create(const Artifact &artifact, std::unique_ptr<DeviceModel> &out) {
  const std::string what =
      artifact.path() + ": compiled for CUDA (" + artifact.gpuArch() + ")";
  std::string error;
  const Driver *driver = Driver::get(error);
  std::vector<DeviceInfo> devices;
  if (driver && driver->devices(devices, error) && devices.empty())
    error = "the driver shows none";
  if (!driver || devices.empty())
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION, what + ", but there is no CUDA device: " + error);

  std::unique_ptr<DeviceModel> model(new DeviceModel(*driver, artifact));
  const DeviceInfo &info = devices[0];
  model->deviceName_ = "device 0 (" + info.name + ", sm_" +
                       std::to_string(info.computeCapabilityMajor) +
                       std::to_string(info.computeCapabilityMinor) + ")";
  // PTX runs on its architecture and the later ones, which the driver
  // compiles it for.
  int needed = computeCapability(artifact.gpuArch());
  if (needed < 0 || info.computeCapabilityMajor * 10 + info.computeCapabilityMinor < needed)
    return makeStatus(KILN_STATUS_FAILED_PRECONDITION,
                      what + ", which " + model->deviceName_ + " cannot run");
  auto failed = [&](const char *call, Driver::Result result) {
    return makeStatus(statusCode(result),
                      what + ": " + model->deviceName_ + ": " + driver->describe(call, result));
  };
  if (!driver->device(0, model->device_, error))
    return makeStatus(KILN_STATUS_INTERNAL, what + ": " + error);
  if (Driver::Result result = driver->devicePrimaryCtxRetain(&model->context_, model->device_))
    return failed("cuDevicePrimaryCtxRetain", result);
  if (Driver::Result result = driver->ctxSetCurrent(model->context_))
    return failed("cuCtxSetCurrent", result);
  // The runs' buffers come from the device's stream-ordered pool, which by
  // default gives its memory back to the system at every synchronization,
  // so that each run would map it anew: it keeps it instead.
  Driver::MemoryPool pool = nullptr;
  uint64_t keepAll = UINT64_MAX;
  if (Driver::Result result = driver->deviceGetDefaultMemPool(&pool, model->device_))
    return failed("cuDeviceGetDefaultMemPool", result);
  if (Driver::Result result = driver->memPoolSetAttribute(pool, kReleaseThreshold, &keepAll))
    return failed("cuMemPoolSetAttribute", result);

  // The GPU code's weights, uploaded once into one allocation: each at its
  // place in it, in the order of the section (a weight the CPU code shares
  // is in the section once, and uploaded once).
  const Code &code = *artifact.gpuCode();
  std::map<const void *, uint64_t> placed;
  uint64_t bytes = 0;
  for (const WeightInfo &weight : code.weights)
    if (placed.emplace(weight.data, bytes).second)
      bytes = artifact::alignTo(bytes + weight.bytes(), kWeightAlignment);
  if (bytes > 0) {
    if (Driver::Result result = driver->memAlloc(&model->weightBlock_, bytes))
      return failed("cuMemAlloc", result);
    Driver::Stream upload = nullptr;
    if (Driver::Result result = driver->streamCreate(&upload, kStreamNonBlocking))
      return failed("cuStreamCreate", result);
    Driver::Result result = 0;
    const char *call = "cuMemcpyAsync";
    for (const WeightInfo &weight : code.weights)
      if (!result && weight.bytes() > 0)
        result = driver->memcpyAsync(model->weightBlock_ + placed[weight.data],
                                     address(weight.data), weight.bytes(), upload);
    if (!result && (result = driver->streamSynchronize(upload)))
      call = "cuStreamSynchronize";
    driver->streamDestroy(upload);
    if (result)
      return failed(call, result);
  }
  for (const WeightInfo &weight : code.weights)
    model->weights_.push_back(model->weightBlock_ + placed[weight.data]);
  out = std::move(model);
  return nullptr;
}

DeviceModel::~DeviceModel() {
  if (!context_)
    return;
  driver_.ctxSetCurrent(context_);
  for (auto &[image, module] : modules_)
    driver_.moduleUnload(module);
  if (weightBlock_)
    driver_.memFree(weightBlock_);
  driver_.devicePrimaryCtxRelease(device_);
}

Driver::Module DeviceModel::module(const void *image, std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &[loaded, module] : modules_)
    if (loaded == image)
      return module;
  Driver::Module module = nullptr;
  if (Driver::Result result = driver_.moduleLoadData(&module, image)) {
    error = "loading the kernels on " + deviceName_ + ": " +
            driver_.describe("cuModuleLoadData", result);
    return nullptr;
  }
  modules_.emplace_back(image, module);
  return module;
}

Driver::Function DeviceModel::function(Driver::Module module, const char *name,
                                       std::string &error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = functions_.find({module, name});
  if (found != functions_.end())
    return found->second;
  Driver::Function function = nullptr;
  if (Driver::Result result = driver_.moduleGetFunction(&function, module, name)) {
    error = std::string("finding kernel ") + name + ": " +
            driver_.describe("cuModuleGetFunction", result);
    return nullptr;
  }
  functions_.emplace(std::make_pair(module, name), function);
  return function;
}

const char *DeviceModel::kernelName(Driver::Function function) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[key, known] : functions_)
    if (known == function)
      return key.second;
  return "(unknown)";
}

int32_t DeviceModel::takeKernelCheck(Driver::Stream stream, std::string &error) {
  Driver::Module module = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (artifact_.kernelChecks().empty() || modules_.empty())
      return 0; // no check to fail, or no kernel ran
    module = modules_.front().second;
  }
  Driver::DevicePointer flag = 0;
  size_t size = 0;
  int32_t value = 0;
  Driver::Result result = driver_.moduleGetGlobal(&flag, &size, module, "kiln_kernel_check");
  const char *call = "cuModuleGetGlobal";
  if (result == kNotFound)
    return 0;
  if (!result && size != sizeof(value)) {
    error = "the kernels' kiln_kernel_check is " + std::to_string(size) + " bytes, not 4";
    return -1;
  }
  if (!result && (result = driver_.memcpyAsync(address(&value), flag, sizeof(value), stream)))
    call = "cuMemcpyAsync";
  if (!result && (result = driver_.streamSynchronize(stream)))
    call = "cuStreamSynchronize";
  if (!result && value != 0 && (result = driver_.memsetD32Async(flag, 0, 1, stream)))
    call = "cuMemsetD32Async";
  if (result) {
    error = "reading the kernels' checks: " + driver_.describe(call, result);
    return -1;
  }
  return value;
}

kiln_status_t DeviceSession::create(DeviceModel &model, size_t arenaBytes,
                                    std::unique_ptr<DeviceSession> &out) {
  const Driver &driver = model.driver();
  std::unique_ptr<DeviceSession> session(new DeviceSession(model));
  auto failed = [&](const char *call, Driver::Result result) {
    return makeStatus(statusCode(result),
                      model.deviceName() + ": " + driver.describe(call, result));
  };
  if (Driver::Result result = driver.ctxSetCurrent(model.context()))
    return failed("cuCtxSetCurrent", result);
  if (Driver::Result result = driver.streamCreate(&session->stream_, kStreamNonBlocking))
    return failed("cuStreamCreate", result);
  if (arenaBytes > 0)
    if (Driver::Result result = driver.memAlloc(&session->arena_, arenaBytes))
      return failed("cuMemAlloc (the arena)", result);
  out = std::move(session);
  return nullptr;
}

DeviceSession::~DeviceSession() {
  const Driver &driver = model_.driver();
  driver.ctxSetCurrent(model_.context());
  if (stream_) {
    driver.streamSynchronize(stream_);
    driver.streamDestroy(stream_);
  }
  if (arena_)
    driver.memFree(arena_);
}

kiln_status_t DeviceSession::run(const std::vector<Input> &inputs,
                                 const std::vector<Output> &outputs,
                                 const std::function<kiln_status_t()> &callEntry) {
  const Driver &driver = model_.driver();
  auto failed = [&](const char *call, Driver::Result result) {
    return makeStatus(statusCode(result),
                      "the run on " + model_.deviceName() + " failed: " +
                          driver.describe(call, result));
  };
  if (Driver::Result result = driver.ctxSetCurrent(model_.context()))
    return failed("cuCtxSetCurrent", result);
  DeviceRun run{model_, stream_, {}, {}};
  kiln_status_t status = nullptr;
  std::vector<Driver::DevicePointer> inputCopies;
  for (const Input &input : inputs) {
    Driver::DevicePointer copy = 0;
    if (input.bytes > 0) {
      Driver::Result result = driver.memAllocAsync(&copy, input.bytes, stream_);
      if (result) {
        status = failed("cuMemAllocAsync (an input)", result);
        break;
      }
      inputCopies.push_back(copy);
      if ((result = driver.memcpyAsync(copy, address(input.data), input.bytes, stream_))) {
        status = failed("cuMemcpyAsync (an input)", result);
        break;
      }
    }
    input.descriptor[0] = input.descriptor[1] = static_cast<int64_t>(copy);
  }
  if (!status) {
    ScopedDeviceRun current(&run);
    status = callEntry();
  }
  // Whatever was queued runs to its end before its buffers go.
  if (Driver::Result result = driver.streamSynchronize(stream_); result && !status)
    status = failed("cuStreamSynchronize", result);
  if (!status) {
    std::string error;
    int32_t check = model_.takeKernelCheck(stream_, error);
    const std::vector<std::string> &messages = model_.artifact().kernelChecks();
    if (check < 0)
      status = makeStatus(KILN_STATUS_INTERNAL, "the run on " + model_.deviceName() +
                                                    " failed: " + error);
    else if (check > 0)
      status = makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                          "the inputs are inconsistent: " +
                              (size_t(check) <= messages.size()
                                   ? messages[check - 1]
                                   : "a kernel's check " + std::to_string(check) + " failed"));
  }
  if (!status)
    status = mirrorOutputs(outputs);
  for (Driver::DevicePointer buffer : run.allocations)
    driver.memFreeAsync(buffer, stream_);
  for (Driver::DevicePointer buffer : inputCopies)
    driver.memFreeAsync(buffer, stream_);
  return status;
}

kiln_status_t DeviceSession::mirrorOutputs(const std::vector<Output> &outputs) {
  const Driver &driver = model_.driver();
  std::vector<void *> mirrors(outputs.size(), nullptr);
  auto releaseMirrors = [&] {
    for (void *mirror : mirrors)
      if (mirror)
        releaseBuffer(mirror);
  };
  std::vector<int64_t> lowest(outputs.size(), 0);
  for (size_t i = 0; i < outputs.size(); ++i) {
    int64_t *words = outputs[i].descriptor;
    // A constant the host code returns is its own global, in host memory.
    if (reinterpret_cast<void *>(words[0]) == kGlobalAllocatedMarker)
      continue;
    const size_t rank = outputs[i].rank;
    const int64_t *sizes = words + 3, *strides = sizes + rank;
    // The elements span [lo, hi] from the aligned pointer.
    int64_t lo = words[2], hi = words[2];
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      empty |= sizes[d] == 0;
      int64_t extent = (sizes[d] - 1) * strides[d];
      (extent < 0 ? lo : hi) += extent;
    }
    if (empty) {
      words[0] = words[1] = words[2] = 0;
      continue;
    }
    const size_t bytes = size_t(hi - lo + 1) * outputs[i].elementSize;
    mirrors[i] = allocateBuffer(64, bytes);
    if (!mirrors[i]) {
      releaseMirrors();
      return makeStatus(KILN_STATUS_RESOURCE_EXHAUSTED,
                        "out of memory for an output of " + std::to_string(bytes) + " bytes");
    }
    const Driver::DevicePointer source =
        static_cast<Driver::DevicePointer>(words[1]) + lo * outputs[i].elementSize;
    if (Driver::Result result = driver.memcpyAsync(address(mirrors[i]), source, bytes, stream_)) {
      releaseMirrors();
      return makeStatus(KILN_STATUS_INTERNAL, "copying an output from " + model_.deviceName() +
                                                  ": " + driver.describe("cuMemcpyAsync", result));
    }
    lowest[i] = lo;
  }
  if (Driver::Result result = driver.streamSynchronize(stream_)) {
    releaseMirrors();
    return makeStatus(KILN_STATUS_INTERNAL, "copying the outputs from " + model_.deviceName() +
                                                ": " + driver.describe("cuStreamSynchronize", result));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!mirrors[i])
      continue;
    int64_t *words = outputs[i].descriptor;
    words[0] = words[1] = reinterpret_cast<int64_t>(mirrors[i]);
    words[2] -= lowest[i];
  }
  return nullptr;
}

} // namespace kiln::rt::cuda
