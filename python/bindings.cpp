//===- bindings.cpp - kiln._kiln: the runtime, engine and tokenizer -------===//
//
// A thin pybind11 layer over the public C++ wrappers (kiln/runtime.hpp,
// engine.hpp, tokenizer.hpp); the Pythonic API (InferenceSession, LLM,
// SamplingParams, compile) is written in Python on top of it
// (kiln/__init__.py). kiln::Error becomes kiln.KilnError (a RuntimeError)
// carrying the status code's name.
//
//===----------------------------------------------------------------------===//
#include "kiln/engine.hpp"
#include "kiln/tokenizer.hpp"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

namespace py = pybind11;

namespace {

// numpy dtypes and Kiln's, both ways.
struct DtypeName {
  kiln_dtype_t dtype;
  const char *numpy;
};
constexpr DtypeName kDtypes[] = {
    {KILN_DTYPE_F32, "float32"}, {KILN_DTYPE_F64, "float64"}, {KILN_DTYPE_F16, "float16"},
    {KILN_DTYPE_I64, "int64"},   {KILN_DTYPE_I32, "int32"},   {KILN_DTYPE_I16, "int16"},
    {KILN_DTYPE_I8, "int8"},     {KILN_DTYPE_U64, "uint64"},  {KILN_DTYPE_U32, "uint32"},
    {KILN_DTYPE_U16, "uint16"},  {KILN_DTYPE_U8, "uint8"},    {KILN_DTYPE_BOOL, "bool"},
};

py::dtype numpyDtype(kiln_dtype_t dtype) {
  for (const DtypeName &entry : kDtypes)
    if (entry.dtype == dtype)
      return py::dtype(entry.numpy);
  throw kiln::Error(KILN_STATUS_UNIMPLEMENTED,
                    std::string("no numpy dtype for ") + kiln_dtype_name(dtype));
}

kiln_dtype_t kilnDtype(const py::dtype &dtype, const std::string &input) {
  for (const DtypeName &entry : kDtypes)
    if (dtype.is(py::dtype(entry.numpy)))
      return entry.dtype;
  throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT,
                    "input '" + input + "': numpy dtype " +
                        py::cast<std::string>(py::str(py::object(dtype))) +
                        " has no Kiln element type");
}

// One input or output as ONNX Runtime's NodeArg shows it: name, shape (ints,
// or the dim's name where it is symbolic) and type ("tensor(float)").
py::dict ioInfo(const kiln_io_info_t &info) {
  py::list shape;
  for (int32_t i = 0; i < info.rank; ++i) {
    if (info.dims[i].size >= 0)
      shape.append(info.dims[i].size);
    else
      shape.append(std::string(info.dims[i].name));
  }
  py::dict result;
  result["name"] = std::string(info.name);
  result["shape"] = shape;
  // Kiln's name: bf16 has no numpy dtype, and the info must still exist.
  result["dtype"] = std::string(kiln_dtype_name(info.dtype));
  result["dims"] = py::list();
  for (int32_t i = 0; i < info.rank; ++i)
    result["dims"].cast<py::list>().append(
        py::make_tuple(std::string(info.dims[i].name), info.dims[i].min, info.dims[i].max));
  return result;
}

// Runs a model once: feeds by name, every output back as a numpy array.
py::dict run(const kiln::Model &model, const py::dict &feeds) {
  kiln::Session session(model);
  std::vector<py::array> keep; // contiguous copies live until the run ends
  for (auto item : feeds) {
    std::string name = py::str(item.first);
    py::array array = py::array::ensure(item.second, py::array::c_style);
    if (!array)
      throw kiln::Error(KILN_STATUS_INVALID_ARGUMENT, "input '" + name + "' is not an array");
    keep.push_back(array);
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    session.bindInput(model.inputIndex(name), kilnDtype(array.dtype(), name), shape,
                      array.data(), (size_t)array.nbytes());
  }
  {
    py::gil_scoped_release release;
    session.run();
  }
  py::dict outputs;
  for (int32_t i = 0; i < model.outputCount(); ++i) {
    kiln_tensor_t tensor = session.output(i);
    std::vector<py::ssize_t> shape(tensor.shape, tensor.shape + tensor.rank);
    py::array array(numpyDtype(tensor.dtype), shape);
    std::memcpy(array.mutable_data(), tensor.data, tensor.byte_size);
    outputs[py::str(model.output(i).name)] = array;
  }
  return outputs;
}

} // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln's runtime, generation engine and tokenizer (see the kiln package)";
  static py::exception<kiln::Error> error(m, "KilnError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const kiln::Error &e) {
      error(e.what());
    }
  });

  py::class_<kiln::Instance>(m, "Instance").def(py::init<int32_t>(), py::arg("num_threads") = 0);

  py::class_<kiln::Model>(m, "Model")
      .def(py::init<const kiln::Instance &, const std::string &>(), py::keep_alive<1, 2>())
      .def("inputs",
           [](const kiln::Model &model) {
             py::list list;
             for (int32_t i = 0; i < model.inputCount(); ++i)
               list.append(ioInfo(model.input(i)));
             return list;
           })
      .def("outputs",
           [](const kiln::Model &model) {
             py::list list;
             for (int32_t i = 0; i < model.outputCount(); ++i)
               list.append(ioInfo(model.output(i)));
             return list;
           })
      .def("run", &run, py::arg("feeds"));

  py::class_<kiln::SamplingParams>(m, "EngineSamplingParams")
      .def(py::init<>())
      .def_readwrite("temperature", &kiln::SamplingParams::temperature)
      .def_readwrite("top_k", &kiln::SamplingParams::top_k)
      .def_readwrite("top_p", &kiln::SamplingParams::top_p)
      .def_readwrite("min_p", &kiln::SamplingParams::min_p)
      .def_readwrite("repetition_penalty", &kiln::SamplingParams::repetition_penalty)
      .def_readwrite("presence_penalty", &kiln::SamplingParams::presence_penalty)
      .def_readwrite("frequency_penalty", &kiln::SamplingParams::frequency_penalty)
      .def_readwrite("seed", &kiln::SamplingParams::seed)
      .def_readwrite("has_seed", &kiln::SamplingParams::has_seed)
      .def_readwrite("max_tokens", &kiln::SamplingParams::max_tokens)
      .def_readwrite("logprobs", &kiln::SamplingParams::logprobs);

  py::class_<kiln::EngineOptions>(m, "EngineOptions")
      .def(py::init<>())
      .def_readwrite("block_size", &kiln::EngineOptions::block_size)
      .def_readwrite("kv_cache_bytes", &kiln::EngineOptions::kv_cache_bytes)
      .def_readwrite("max_num_seqs", &kiln::EngineOptions::max_num_seqs)
      .def_readwrite("max_num_batched_tokens", &kiln::EngineOptions::max_num_batched_tokens)
      .def_readwrite("enable_prefix_caching", &kiln::EngineOptions::enable_prefix_caching);

  // Events reach Python as (token_id, logprob, top [(id, logprob)],
  // finish_reason or None, error or None), on the thread that steps, with
  // the GIL held: step() keeps it.
  py::class_<kiln::Engine>(m, "Engine")
      .def(py::init<const kiln::Model &, const kiln::EngineOptions &>(), py::keep_alive<1, 2>())
      .def("add_request",
           [](kiln::Engine &engine, const std::vector<int64_t> &prompt,
              const kiln::SamplingParams &params, const std::vector<int64_t> &stopTokenIds,
              py::function callback) {
             kiln::SamplingParams copy = params;
             // The engine copies the stop ids when it takes the request.
             copy.stop_token_ids = stopTokenIds.data();
             copy.num_stop_token_ids = (int32_t)stopTokenIds.size();
             return engine.addRequest(prompt, copy, [callback](const kiln_engine_event_t &event) {
               py::gil_scoped_acquire gil;
               py::list top;
               for (int32_t i = 0; i < event.num_top_logprobs; ++i)
                 top.append(py::make_tuple(event.top_token_ids[i], event.top_logprobs[i]));
               static const char *names[] = {nullptr, "stop", "length", "abort", "error"};
               py::object reason = event.finish_reason == KILN_FINISH_NONE
                                       ? py::object(py::none())
                                       : py::object(py::str(names[event.finish_reason]));
               py::object message = event.error_message ? py::object(py::str(event.error_message))
                                                        : py::object(py::none());
               callback(event.token_id, event.logprob, top, reason, message);
             });
           })
      .def("abort", &kiln::Engine::abort)
      .def("step", &kiln::Engine::step)
      .def("has_unfinished", &kiln::Engine::hasUnfinished)
      .def("max_model_len", [](const kiln::Engine &engine) { return engine.stats().max_model_len; });

  py::class_<kiln::Tokenizer>(m, "Tokenizer")
      .def(py::init<const std::string &>())
      .def("encode", &kiln::Tokenizer::encode, py::arg("text"),
           py::arg("add_special_tokens") = true)
      .def(
          "encode_pair",
          [](const kiln::Tokenizer &tokenizer, const std::string &text,
             std::optional<std::string> pair, bool addSpecialTokens) {
            kiln::Tokenizer::Encoding encoding = tokenizer.encodePair(
                text, pair ? std::optional<std::string_view>(*pair) : std::nullopt,
                addSpecialTokens);
            return py::make_tuple(encoding.ids, encoding.typeIds);
          },
          py::arg("text"), py::arg("pair") = py::none(), py::arg("add_special_tokens") = true,
          "(ids, type_ids) of a text and its optional pair, joined by the post-processor")
      .def("decode", &kiln::Tokenizer::decode, py::arg("ids"),
           py::arg("skip_special_tokens") = false)
      .def("apply_chat_template", &kiln::Tokenizer::applyChatTemplate, py::arg("context_json"))
      .def("token_to_id", &kiln::Tokenizer::tokenToId)
      .def("id_to_token", &kiln::Tokenizer::idToToken)
      .def_property_readonly("vocab_size", &kiln::Tokenizer::vocabSize)
      .def_property_readonly("bos_token_id", &kiln::Tokenizer::bosId)
      .def_property_readonly("eos_token_id", &kiln::Tokenizer::eosId);

  py::class_<kiln::Detokenizer>(m, "Detokenizer")
      .def(py::init<const kiln::Tokenizer &, const std::vector<int32_t> &, bool>(),
           py::keep_alive<1, 2>(), py::arg("tokenizer"), py::arg("context") = std::vector<int32_t>(),
           py::arg("skip_special_tokens") = false)
      .def("push", py::overload_cast<int32_t>(&kiln::Detokenizer::push))
      .def("finish", &kiln::Detokenizer::finish);
}
