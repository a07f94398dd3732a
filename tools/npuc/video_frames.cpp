// Video frames through OpenCV's VideoCapture (video_frames.hpp); a build without OpenCV's videoio refuses videos.
#include "video_frames.hpp"

#include "npuc/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

#ifdef NPUC_HAVE_VIDEO
#include <opencv2/core.hpp>
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>
#endif

namespace npuc::cli {

bool videoSupported() {
#ifdef NPUC_HAVE_VIDEO
  return true;
#else
  return false;
#endif
}

bool isVideoFile(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::array<const char*, 7> kVideo = {".mp4", ".avi", ".mkv", ".mov", ".webm", ".mjpg", ".mjpeg"};
  return std::find(kVideo.begin(), kVideo.end(), ext) != kVideo.end();
}

void forEachVideoFrame(const std::string& file, int64_t max_frames,
                       const std::function<void(int64_t, const uint8_t*, int64_t, int64_t)>& fn) {
#ifdef NPUC_HAVE_VIDEO
  if (!std::filesystem::is_regular_file(file)) throw Error(ErrorCode::kIo, fmt::format("{}: no such file", file));
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);  // (its backends' own chatter; our errors name the file)
  cv::VideoCapture cap;
  try {
    // (FFmpeg where OpenCV has it: it reads the common containers; any backend otherwise)
    cap.open(file, cv::videoio_registry::hasBackend(cv::CAP_FFMPEG) ? cv::CAP_FFMPEG : cv::CAP_ANY);
  } catch (const cv::Exception& e) {
    throw Error(ErrorCode::kInvalidInput, fmt::format("{}: OpenCV cannot open the video ({})", file, e.what()));
  }
  if (!cap.isOpened()) throw Error(ErrorCode::kInvalidInput, fmt::format("{}: OpenCV cannot open the video (no decoder for it)", file));
  cv::Mat frame;
  int64_t n = 0;
  while ((max_frames == 0 || n < max_frames) && cap.read(frame) && !frame.empty()) {
    if (frame.type() != CV_8UC3 || !frame.isContinuous())
      throw Error(ErrorCode::kInvalidInput, fmt::format("{}: frame {} is not 8-bit, 3-channel", file, n));
    fn(n++, frame.ptr<uint8_t>(0), frame.rows, frame.cols);
  }
  if (n == 0) throw Error(ErrorCode::kInvalidInput, fmt::format("{}: the video holds no frame OpenCV can decode", file));
#else
  (void)max_frames;
  (void)fn;
  throw Error(ErrorCode::kUnsupported,
              fmt::format("{}: a video clip; this npuc was built without a video decoder (OpenCV's videoio: apt-get install "
                          "libopencv-videoio-dev, then build again), or give a folder of its frames (ffmpeg -i {} frames/%05d.png)",
                          file, file));
#endif
}

}  // namespace npuc::cli
