// npuc._npuc's pictures as samples (docs/python.md): translate --calib NAME=DIR's folders (npuc::sampleFolder) and
// its pictures' decoding, resizing and normalisation (npuc::picturesAsSamples) for Python's calibration and
// evaluation sets (npuc.calibration.read_samples, npuc tune). Errors are npuc::Error, translated by the module's handler.
#include "npuc/model.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstring>

namespace py = pybind11;

void bindPictures(py::module_& m) {
  using namespace npuc;
  m.def(
      "pictures_as_samples",
      [](const std::vector<std::filesystem::path>& pictures, const std::vector<int64_t>& shape, const std::vector<double>& mean,
         const std::vector<double>& scale, bool bgr) {
        PictureSamples o;
        o.mean = mean, o.scale = scale, o.bgr = bgr;
        Tensor t;
        {
          py::gil_scoped_release nogil;
          t = picturesAsSamples(pictures, shape, o);
        }
        py::array_t<float> a(std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
        if (t.nbytes()) std::memcpy(a.mutable_data(), t.raw(), t.nbytes());
        return a;
      },
      py::arg("pictures"), py::arg("shape"), py::arg("mean") = std::vector<double>{0.0},
      py::arg("scale") = std::vector<double>{1.0 / 255.0}, py::arg("bgr") = false,
      "Pictures as float32 samples of an input of `shape` ([1, C, H, W] or channel last [1, H, W, C], C 1 or 3), "
      "stacked on the first axis: each decoded, resized to H x W (INTER_AREA), in R, G, B order (bgr: B, G, R; one "
      "channel: the luma), then (v - mean[c]) * scale[c] — translate --calib NAME=DIR's samples "
      "(npuc::picturesAsSamples; docs/calibration.md). Raises npuc.Error naming a picture that does not decode.");
  m.def(
      "sample_folder",
      [](const std::filesystem::path& dir) {
        SampleFolder f = sampleFolder(dir);
        return py::make_tuple(f.shards, f.pictures);
      },
      py::arg("dir"),
      "A folder given as samples (--calib NAME=DIR): (its .npy shards, its pictures), each in name order, one of them "
      "empty (npuc::sampleFolder). Raises npuc.Error for a folder of both kinds or of neither.");
}
