// Frames of a video file for the TIDL demos (npuc tidl-classify -i clip.mp4), decoded by OpenCV's VideoCapture when
// npuc is built with OpenCV's videoio (CMake finds it: Debian's libopencv-videoio-dev; docs/cli.md). Without it a
// video is refused with the way round (a folder of its frames).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace npuc::cli {

/// Whether this build decodes video files.
bool videoSupported();
/// Whether `path` names a video file by its extension (.mp4, .avi, .mkv, .mov, .webm, .mjpg, .mjpeg).
bool isVideoFile(const std::string& path);
/// Decodes the frames of `file` in order and calls fn(index, bgr, height, width) for each (8-bit B, G, R interleaved,
/// as VideoCapture gives them), the first `max_frames` (0: all). Throws npuc::Error naming the file when it cannot be
/// opened, holds no frame, or this build has no decoder.
void forEachVideoFrame(const std::string& file, int64_t max_frames,
                       const std::function<void(int64_t, const uint8_t*, int64_t, int64_t)>& fn);

}  // namespace npuc::cli
