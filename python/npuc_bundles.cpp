// npuc._npuc's model bundles (docs/python.md): Kneron's multi-model NEF as npuc folders, each model under an id
// (npuc::writeBundle, bundleModel, bundleModelIds). Errors are npuc::Error, translated by the module's handler.
#include "npuc/runtime.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

namespace py = pybind11;

void bindBundles(py::module_& m) {
  using namespace npuc;
  m.def(
      "bundle",
      [](const std::string& name, const std::map<int64_t, std::filesystem::path>& models, const std::filesystem::path& out) {
        std::vector<std::pair<int64_t, std::filesystem::path>> list(models.begin(), models.end());
        py::gil_scoped_release nogil;
        return writeBundle(out, name, list);
      },
      py::arg("name"), py::arg("models"), py::arg("out") = "output",
      "Writes out/name: the packages of `models` (a dict model id -> package folder) in one folder, each under its id "
      "(npuc bundle; Kneron's multi-model NEF, whose model is picked by inference(model_id=...)); returns the folder");
  m.def("bundle_model_ids", &bundleModelIds, py::arg("folder"), "The model ids of a bundle (empty for any other folder)");
  m.def("bundle_model", &bundleModel, py::arg("folder"), py::arg("model_id"), "The package folder of a bundle's model");
}
