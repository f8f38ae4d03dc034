// Kiln runtime C++ wrapper: RAII handles over the C API in runtime.h, with
// failures thrown as kiln::Error. Thread safety is that of the C API: Model is
// shareable across threads once loaded; a Session is used by one thread at a
// time.
#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln/runtime.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

class Error : public std::runtime_error {
public:
  Error(kiln_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  kiln_status_code_t code() const { return code_; }

private:
  kiln_status_code_t code_;
};

/// Throws the status as an Error (and frees it) when it is not OK.
inline void check(kiln_status_t status) {
  if (!status)
    return;
  Error error(kiln_status_code(status), kiln_status_message(status));
  kiln_status_free(status);
  throw error;
}

class Instance {
public:
  explicit Instance(int32_t numThreads = 0) {
    kiln_instance_options_t options;
    kiln_instance_options_init(&options);
    options.num_threads = numThreads;
    kiln_instance_t *instance = nullptr;
    check(kiln_instance_create(&options, &instance));
    handle_.reset(instance);
  }
  kiln_instance_t *get() const { return handle_.get(); }
  int32_t numThreads() const { return kiln_instance_num_threads(get()); }
  std::string kernelIsa() const { return kiln_instance_kernel_isa(get()); }

private:
  struct Release {
    void operator()(kiln_instance_t *p) const { kiln_instance_release(p); }
  };
  std::unique_ptr<kiln_instance_t, Release> handle_;
};

class Model {
public:
  Model(const Instance &instance, const std::string &path,
        kiln_device_t device = KILN_DEVICE_AUTO) {
    kiln_model_options_t options;
    kiln_model_options_init(&options);
    options.device = device;
    kiln_model_t *model = nullptr;
    check(kiln_model_load(instance.get(), path.c_str(), &options, &model));
    handle_.reset(model);
  }
  kiln_model_t *get() const { return handle_.get(); }
  int32_t inputCount() const { return kiln_model_input_count(get()); }
  int32_t outputCount() const { return kiln_model_output_count(get()); }
  size_t arenaBytes() const { return kiln_model_arena_bytes(get()); }
  std::string device() const { return kiln_model_device(get()); }
  kiln_io_info_t input(int32_t index) const {
    kiln_io_info_t info;
    check(kiln_model_input_info(get(), index, &info));
    return info;
  }
  kiln_io_info_t output(int32_t index) const {
    kiln_io_info_t info;
    check(kiln_model_output_info(get(), index, &info));
    return info;
  }
  /// The index of input `name`; throws when there is none.
  int32_t inputIndex(const std::string &name) const {
    int32_t index = kiln_model_find_input(get(), name.c_str());
    if (index < 0)
      throw Error(KILN_STATUS_NOT_FOUND, "the model has no input '" + name + "'");
    return index;
  }

private:
  struct Release {
    void operator()(kiln_model_t *p) const { kiln_model_release(p); }
  };
  std::unique_ptr<kiln_model_t, Release> handle_;
};

class Session {
public:
  explicit Session(const Model &model) {
    kiln_session_t *session = nullptr;
    check(kiln_session_create(model.get(), &session));
    handle_.reset(session);
  }
  kiln_session_t *get() const { return handle_.get(); }
  /// Binds caller memory (see kiln_session_bind_input).
  void bindInput(int32_t index, kiln_dtype_t dtype,
                 const std::vector<int64_t> &shape, const void *data,
                 size_t byteSize) {
    kiln_tensor_t tensor = {dtype, (int32_t)shape.size(), shape.data(),
                            const_cast<void *>(data), byteSize};
    check(kiln_session_bind_input(get(), index, &tensor));
  }
  void bindOutput(int32_t index, void *data, size_t capacity) {
    kiln_tensor_t tensor = {KILN_DTYPE_INVALID, 0, nullptr, data, capacity};
    check(kiln_session_bind_output(get(), index, &tensor));
  }
  void run() { check(kiln_session_run(get())); }
  kiln_tensor_t output(int32_t index) const {
    kiln_tensor_t tensor;
    check(kiln_session_output(get(), index, &tensor));
    return tensor;
  }

private:
  struct Release {
    void operator()(kiln_session_t *p) const { kiln_session_release(p); }
  };
  std::unique_ptr<kiln_session_t, Release> handle_;
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP
