/* npuc C API: load an npuc object package (the folder `npuc translate` writes) and run it on the simulated device.
 *
 * This header is plain C99 and usable from C++. It wraps npuc::Runtime (include/npuc/runtime.hpp); results are
 * bit-identical to it. Link with the installed CMake package:
 *
 *     find_package(npuc REQUIRED)
 *     target_link_libraries(app PRIVATE npuc::runtime)
 *
 * Conventions
 * - Handles are opaque (npuc_runtime, npuc_pipeline). Every function that can fail returns an npuc_status; on failure it stores
 *   a message for the calling thread, returned by npuc_last_error(). No function throws, aborts or crashes on a
 *   NULL pointer, a bad index or an unknown name: those return NPUC_STATUS_INVALID_ARGUMENT.
 * - Out-parameters are written only on success, except where a function says otherwise.
 * - Strings returned by the library (tensor and layer names, the content hash, …) stay valid until the runtime
 *   that owns them is closed; npuc_version(), npuc_status_name() and npuc_dtype_name() return static strings.
 * - Threads: one npuc_runtime is used by one thread at a time. npuc_runtime_set_input, _run and _get_output
 *   called while another call of these three is inside the same runtime (another thread, or a layer callback
 *   calling back into its runtime) fail with NPUC_STATUS_INVALID_ARGUMENT instead of racing. Different runtimes
 *   are independent and may run concurrently, each with its own worker threads. The last error is per thread.
 *   An npuc_pipeline follows the same rules (its stages run on their own threads inside npuc_pipeline_run).
 *   Closing a handle while another thread is inside one of its calls is undefined.
 *
 *     npuc_runtime* rt = NULL;
 *     if (npuc_runtime_open("output/digits", 1, 0, &rt) != NPUC_STATUS_OK) {
 *       fprintf(stderr, "%s\n", npuc_last_error());
 *       return 1;
 *     }
 *     npuc_runtime_set_input(rt, "input", NPUC_DTYPE_FLOAT32, pixels, sizeof pixels);
 *     npuc_runtime_run(rt, NULL, NULL);
 *     npuc_runtime_get_output(rt, "logits", 1, logits, sizeof logits, NULL);
 *     npuc_runtime_close(rt);
 */
#ifndef NPUC_NPUC_H_
#define NPUC_NPUC_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define NPUC_API
#else
#define NPUC_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this C API. Additions keep the number; a change that breaks existing callers increments it. */
#define NPUC_C_API_VERSION 1

/** Most dimensions a tensor can have in npuc_tensor_info / npuc_layer_info (packages use at most 6). */
#define NPUC_MAX_RANK 8

/** Result of every fallible call. The non-OK codes are those of npuc::ErrorCode, plus out-of-memory. */
typedef enum npuc_status {
  NPUC_STATUS_OK = 0,
  NPUC_STATUS_INVALID_ARGUMENT = 1, /* a bad API argument: NULL pointer, bad index, unknown name, wrong size */
  NPUC_STATUS_INVALID_INPUT = 2,    /* malformed or inconsistent input: a damaged package, a device fault */
  NPUC_STATUS_UNSUPPORTED = 3,      /* well-formed input that npuc does not support */
  NPUC_STATUS_IO = 4,               /* file system failure: missing package folder or file, unreadable file */
  NPUC_STATUS_INTERNAL = 5,         /* a bug in npuc (or an unexpected exception) */
  NPUC_STATUS_OUT_OF_MEMORY = 6,    /* an allocation failed */
  NPUC_STATUS_RANGE_MAX_ = 0x7fffffff /* not a status: keeps the enum int-sized */
} npuc_status;

/** Element types; the values equal npuc::DType's. */
typedef enum npuc_dtype {
  NPUC_DTYPE_UNDEFINED = 0,
  NPUC_DTYPE_FLOAT32 = 1,
  NPUC_DTYPE_FLOAT16 = 2, /* IEEE binary16, stored as uint16_t bits */
  NPUC_DTYPE_BFLOAT16 = 3,
  NPUC_DTYPE_FLOAT64 = 4,
  NPUC_DTYPE_INT8 = 5,
  NPUC_DTYPE_UINT8 = 6,
  NPUC_DTYPE_INT16 = 7,
  NPUC_DTYPE_UINT16 = 8,
  NPUC_DTYPE_INT32 = 9,
  NPUC_DTYPE_UINT32 = 10,
  NPUC_DTYPE_INT64 = 11,
  NPUC_DTYPE_UINT64 = 12,
  NPUC_DTYPE_BOOL = 13,
  /* Not a type: makes the enum span every int, so that any value a C caller passes is a valid npuc_dtype to C++
     (out-of-range codes are then refused with NPUC_STATUS_INVALID_ARGUMENT, not undefined behaviour). */
  NPUC_DTYPE_RANGE_MIN_ = -0x7fffffff - 1,
  NPUC_DTYPE_RANGE_MAX_ = 0x7fffffff
} npuc_dtype;

/** A loaded package with its simulated device memory. Opaque. */
typedef struct npuc_runtime npuc_runtime;

/** An input or output of a package. */
typedef struct npuc_tensor_info {
  const char* name;             /* the ONNX value name; owned by the runtime */
  npuc_dtype dtype;             /* element type in device memory (NPUC_DTYPE_FLOAT16 for fp16 packages) */
  int rank;                     /* number of valid entries in dims */
  int64_t dims[NPUC_MAX_RANK];  /* static shape; entries from rank on are 0 */
  size_t elements;              /* product of the dims (1 for a scalar) */
  size_t bytes;                 /* elements * size of dtype: the bytes of the tensor in device memory */
} npuc_tensor_info;

/** One layer (descriptor) of a package, as passed to an npuc_layer_callback. Strings are owned by the runtime. */
typedef struct npuc_layer_info {
  int seq;                      /* program order, 0-based */
  const char* engine;           /* "mac" or "vector" */
  int index;                    /* position in its engine's descriptor stream */
  const char* kind;             /* layer kind: "conv", "gemm", "binary", … */
  const char* name;             /* layer name (the optimized graph's node) */
  const char* opexp;            /* the ONNX ops fused into it, e.g. "Conv+Relu" */
  npuc_tensor_info output;      /* the value it writes (name = the ONNX value name), in the device type */
} npuc_layer_info;

/**
 * Called by npuc_runtime_run() after each layer, in program order. `data` points at the layer's output in device
 * memory (`bytes` = layer->output.bytes, element type layer->output.dtype) and is valid only during the call;
 * copy what you need. On its own runtime the callback may call the info functions only (set_input, run and
 * get_output fail with NPUC_STATUS_INVALID_ARGUMENT there); it must not throw or longjmp.
 */
typedef void (*npuc_layer_callback)(const npuc_layer_info* layer, const void* data, size_t bytes, void* user);

/** The library version, "MAJOR.MINOR.PATCH" (the npuc project version). Never fails; static string. */
NPUC_API const char* npuc_version(void);

/**
 * The message of the most recent failed call made by the calling thread ("" if none failed yet). Successful calls
 * leave it unchanged. The pointer stays valid until the thread's next failing npuc call.
 */
NPUC_API const char* npuc_last_error(void);

/** A constant name for a status: "ok", "invalid_argument", …, "unknown" for a value outside the enum. */
NPUC_API const char* npuc_status_name(npuc_status status);

/** A constant name for a dtype ("float32", "float16", …; "undefined" for a value outside the enum). */
NPUC_API const char* npuc_dtype_name(npuc_dtype dtype);

/** Bytes per element of a dtype (0 for NPUC_DTYPE_UNDEFINED or a value outside the enum). */
NPUC_API size_t npuc_dtype_size(npuc_dtype dtype);

/**
 * Registers the custom ops of a plugin library (include/npuc/custom_op.h, docs/custom-ops.md) for every runtime of
 * this process; a package with custom layers opens only once the plugin it was translated with (same SHA-256) is
 * registered. Registering the same file twice does nothing. NPUC_STATUS_IO when the file is missing,
 * NPUC_STATUS_INVALID_INPUT when it is not a shared library, not an npuc plugin, of another ABI version, or its op
 * table is faulty (the message names the file and the op).
 */
NPUC_API npuc_status npuc_register_custom_op(const char* library_path);

/**
 * Loads and validates the package in folder `package_dir` and allocates its device memory.
 *   threads: worker threads of this runtime (>= 1); exact: nonzero runs the scalar reference kernels (the
 *   numerics specification, single-threaded) instead of the SIMD ones — both give the same bits.
 * On success *out receives a new runtime, to be released with npuc_runtime_close(). On failure *out is set to
 * NULL (when out is not NULL): NPUC_STATUS_IO when the folder or its manifest is missing,
 * NPUC_STATUS_INVALID_INPUT when a file is malformed or damaged (the message names the file, field and rule),
 * NPUC_STATUS_INVALID_ARGUMENT for NULL arguments or threads < 1.
 */
NPUC_API npuc_status npuc_runtime_open(const char* package_dir, int threads, int exact, npuc_runtime** out);

/** Releases a runtime and everything it owns (names, device memory, threads). NULL is allowed and ignored. */
NPUC_API void npuc_runtime_close(npuc_runtime* rt);

/** Number of inputs / outputs of the package, in *count. */
NPUC_API npuc_status npuc_runtime_num_inputs(const npuc_runtime* rt, size_t* count);
NPUC_API npuc_status npuc_runtime_num_outputs(const npuc_runtime* rt, size_t* count);

/**
 * Describes input / output number `index` (0 <= index < count) in *info. The name stays valid until the runtime
 * is closed. An index out of range is NPUC_STATUS_INVALID_ARGUMENT.
 */
NPUC_API npuc_status npuc_runtime_input_info(const npuc_runtime* rt, size_t index, npuc_tensor_info* info);
NPUC_API npuc_status npuc_runtime_output_info(const npuc_runtime* rt, size_t index, npuc_tensor_info* info);

/** Number of layers (descriptors) of the package, and the description of layer `index` (its seq). */
NPUC_API npuc_status npuc_runtime_num_layers(const npuc_runtime* rt, size_t* count);
NPUC_API npuc_status npuc_runtime_layer_info(const npuc_runtime* rt, size_t index, npuc_layer_info* info);

/**
 * Package facts, as strings owned by the runtime: the target ("generic", "drpai", …), the numerics ("fp32" |
 * "fp16") and the content hash ("sha256:…", the same as `npuc inspect` prints and translate reports).
 */
NPUC_API npuc_status npuc_runtime_target(const npuc_runtime* rt, const char** target);
NPUC_API npuc_status npuc_runtime_numerics(const npuc_runtime* rt, const char** numerics);
NPUC_API npuc_status npuc_runtime_content_hash(const npuc_runtime* rt, const char** hash);

/**
 * Copies the input called `name` into device memory. `data` holds the whole tensor, row-major, in element type
 * `dtype`, which must be the input's device type or NPUC_DTYPE_FLOAT32 (rounded to the device type, to nearest
 * even); `bytes` must equal elements * npuc_dtype_size(dtype). An unknown name, another dtype or another byte
 * count is NPUC_STATUS_INVALID_ARGUMENT. Inputs keep their value across runs until set again (initially zero).
 * The frame input of a dynamic AIPP stage (uint8 [N, max_src_image_size]) also takes a smaller frame, NPUC_DTYPE_UINT8
 * and `bytes` = N * B with B bytes per image, at least what the parameter block's source needs (docs/aipp.md).
 */
NPUC_API npuc_status npuc_runtime_set_input(npuc_runtime* rt, const char* name, npuc_dtype dtype, const void* data,
                                            size_t bytes);

/**
 * Dynamic AIPP (docs/aipp.md): sets the parameter block of the AIPP stage that reads input `name` (the frame input,
 * or its parameter input "<name>_aipp"). `params` holds the kAippDynamicPara bytes, 160 + 96 * (N - 1) bytes for
 * N images. A block that breaks a rule is NPUC_STATUS_INVALID_ARGUMENT and npuc_last_error names the rule; a block
 * written through npuc_runtime_set_input is checked by the stage on every run (NPUC_STATUS_INVALID_INPUT).
 */
NPUC_API npuc_status npuc_runtime_set_dynamic_aipp(npuc_runtime* rt, const char* name, const void* params, size_t bytes);

/** A dynamic AIPP parameter block built field by field, with the seed's field names (docs/aipp.md: the names of the
 *  YAML form, npuc::DynamicAippParams::fromFields and Python's set_dynamic_aipp dicts; one table for all). Opaque:
 *  its layout is no part of the ABI. */
typedef struct npuc_aipp_params npuc_aipp_params;
/** A block for `images` images (batchNum, 1..127): every field 0 except dtcPixelVarReciChn0..3, 1.0. */
NPUC_API npuc_status npuc_aipp_params_create(size_t images, npuc_aipp_params** out);
/** Releases a block. NULL is allowed and ignored. */
NPUC_API void npuc_aipp_params_destroy(npuc_aipp_params* p);
/**
 * Sets one field: a kAippDynamicPara field (inputFormat, cscSwitch, rbuvSwapSwitch, axSwapSwitch, srcImageSizeW/H,
 * cscMatrixR0C0 … R2C2, cscOutputBiasR0..2, cscInputBiasR0..2; `image` must be 0) or image `image`'s
 * kAippDynamicBatchPara field (cropSwitch, scfSwitch, paddingSwitch, rotateSwitch, cropStartPosW/H, cropSizeW/H,
 * scfInputSizeW/H, scfOutputSizeW/H, paddingSizeTop/Bottom/Left/Right, dtcPixelMeanChn0..3, dtcPixelMinChn0..3,
 * dtcPixelVarReciChn0..3). `value`: an integer within the field's C type (inputFormat: the code 1..4), or for
 * dtcPixelMin/VarReciChnN a finite number within the float16 range (stored as float16). Setting a field again
 * replaces its value. An unknown field, an image out of range or a value that does not fit is
 * NPUC_STATUS_INVALID_ARGUMENT and npuc_last_error names the field; the block is then unchanged.
 */
NPUC_API npuc_status npuc_aipp_params_set(npuc_aipp_params* p, const char* field, size_t image, double value);
/**
 * The block's kAippDynamicPara bytes, as npuc_runtime_set_dynamic_aipp takes them: *written receives the size
 * (160 + 96 * (images - 1)); dst NULL with capacity 0 only queries it; a smaller capacity is
 * NPUC_STATUS_INVALID_ARGUMENT. A block without inputFormat, srcImageSizeW/H (or, with their switch on, cropSizeW/H,
 * scfInput/OutputSizeW/H, the nine cscMatrixRxCy) is NPUC_STATUS_INVALID_ARGUMENT naming the missing field.
 */
NPUC_API npuc_status npuc_aipp_params_encode(const npuc_aipp_params* p, void* dst, size_t capacity, size_t* written);
/** npuc_aipp_params_encode, then npuc_runtime_set_dynamic_aipp with those bytes (the same checks and errors). */
NPUC_API npuc_status npuc_runtime_set_dynamic_aipp_params(npuc_runtime* rt, const char* name, const npuc_aipp_params* p);

/**
 * Packages with gears (translated with --dynamic_batch_size / --dynamic_image_size; docs/package-format.md): the
 * number of gears (0 for an ordinary package) and gear `index`'s batch size or height and width (0 for the other
 * kind; NULL pointers are skipped). A runtime starts on the first gear; the setters select the gear of that size
 * (Ascend's aclmdlSetDynamicBatchSize / aclmdlSetDynamicHWSize) — NPUC_STATUS_INVALID_ARGUMENT naming the gears for
 * a size the package lacks — after which inputs, outputs, layers and runs are that gear's (their infos are re-read:
 * strings from earlier info calls are no longer valid).
 */
NPUC_API npuc_status npuc_runtime_num_gears(const npuc_runtime* rt, size_t* count);
NPUC_API npuc_status npuc_runtime_gear(const npuc_runtime* rt, size_t index, int64_t* batch, int64_t* height, int64_t* width);
NPUC_API npuc_status npuc_runtime_set_dynamic_batch_size(npuc_runtime* rt, int64_t batch);
NPUC_API npuc_status npuc_runtime_set_dynamic_hw_size(npuc_runtime* rt, int64_t height, int64_t width);

/**
 * Packages serving shape ranges (translated with --input_shape LO~HI; docs/package-format.md, "Shape ranges"): the
 * number of ranged dimensions (0 for any other package) and range `index`: the tensor (a package input, or the picture
 * of a dynamic AIPP stage; the string lives as long as the runtime), its dimension and its sizes [lo, hi] (NULL
 * pointers are skipped). A runtime starts at every range's largest size; npuc_runtime_set_input_shape selects the
 * sizes of an input's ranged dimensions (NPUC_STATUS_INVALID_ARGUMENT for a shape outside them), as does a dynamic AIPP
 * block whose picture is of another size; inputs, outputs and layers are then the package's at those sizes (their infos
 * are re-read: strings from earlier info calls are no longer valid).
 */
NPUC_API npuc_status npuc_runtime_num_shape_ranges(const npuc_runtime* rt, size_t* count);
NPUC_API npuc_status npuc_runtime_shape_range(const npuc_runtime* rt, size_t index, const char** value, int64_t* dim, int64_t* lo,
                                              int64_t* hi);
NPUC_API npuc_status npuc_runtime_set_input_shape(npuc_runtime* rt, const char* name, const int64_t* dims, size_t rank);

/**
 * Runs every layer of the package in program order. `callback` (may be NULL) is called after each layer with
 * `user` passed through. A device fault (an access outside the address map) is NPUC_STATUS_INVALID_INPUT.
 */
NPUC_API npuc_status npuc_runtime_run(npuc_runtime* rt, npuc_layer_callback callback, void* user);
/**
 * int8-pow2 packages (TIDL's dynamic quantization, docs/numerics.md): each run is one frame and leaves a range
 * history that sets the next frame's scales. This forgets it (every tensor's range back to its calibrated one), as a
 * freshly opened runtime. Other packages have no state: NPUC_OK, nothing done.
 */
NPUC_API npuc_status npuc_runtime_reset_state(npuc_runtime* rt);

/**
 * Copies the output called `name` into dst: in the device type (as_float32 == 0) or converted to float32
 * (as_float32 != 0). *written (if written is not NULL) receives the bytes the output needs, also when dst is too
 * small. Passing dst == NULL with capacity == 0 only queries that size. A capacity smaller than the size is
 * NPUC_STATUS_INVALID_ARGUMENT and copies nothing. Before the first run, outputs read as zeros.
 * An output whose shape the data decide (NonZero's: docs/package-format.md, "Dynamic tensors") has its capacity as
 * its size; after a run, the copy is the tensor at the run's dims (row-major) and *written its bytes (for NonZero's
 * [rank, n]: n = *written / element size / rank).
 */
NPUC_API npuc_status npuc_runtime_get_output(const npuc_runtime* rt, const char* name, int as_float32, void* dst,
                                             size_t capacity, size_t* written);

/**
 * The dims of the output called `name` as the last run wrote them: for an output whose shape the data decide
 * (NonZero's, a detector's boxes: docs/package-format.md, "Dynamic tensors") its run's dims — before any run, its
 * capacity —, for any other its static dims. *rank receives the number of dims and dims[0 .. *rank) the dims (dims
 * holds NPUC_MAX_RANK entries); *dynamic (if not NULL) 1 for an output whose shape the data decide, else 0.
 */
NPUC_API npuc_status npuc_runtime_output_dims(const npuc_runtime* rt, const char* name, int* rank,
                                              int64_t dims[NPUC_MAX_RANK], int* dynamic);

/* ---- Pipelines of simulated cores (docs/runtime-api.md, "Pipelines"; npuc::Pipeline) ------------------------ */

/** A package whose layers are in groups (TIDL's layersGroupId) run as a pipeline: one stage per group, each a
 *  runtime on its own thread, frames handed from stage to stage; the outputs are npuc_runtime_run's, frame after
 *  frame, bit for bit. A package without groups is one stage. Used by one thread at a time, like npuc_runtime. */
typedef struct npuc_pipeline npuc_pipeline;

/**
 * Loads the package in `package_dir` as a pipeline. threads: worker threads of each stage (>= 1); exact as in
 * npuc_runtime_open. Errors as npuc_runtime_open's; NPUC_STATUS_INVALID_ARGUMENT for a package with gears.
 */
NPUC_API npuc_status npuc_pipeline_open(const char* package_dir, int threads, int exact, npuc_pipeline** out);
/** Releases a pipeline (its stages and their threads). NULL is allowed and ignored. */
NPUC_API void npuc_pipeline_close(npuc_pipeline* p);

/** Number of stages; each stage's layers group, and of the last run its mean busy time per frame (ms: its layers and
 *  the hand-over into it) and the bytes handed into it per frame (any of group, busy_ms, handoff_bytes may be NULL). */
NPUC_API npuc_status npuc_pipeline_num_stages(const npuc_pipeline* p, size_t* count);
NPUC_API npuc_status npuc_pipeline_stage_info(const npuc_pipeline* p, size_t index, int* group, double* busy_ms,
                                              uint64_t* handoff_bytes);
/** The package's inputs and outputs, as npuc_runtime_*_info (names valid until npuc_pipeline_close). */
NPUC_API npuc_status npuc_pipeline_num_inputs(const npuc_pipeline* p, size_t* count);
NPUC_API npuc_status npuc_pipeline_num_outputs(const npuc_pipeline* p, size_t* count);
NPUC_API npuc_status npuc_pipeline_input_info(const npuc_pipeline* p, size_t index, npuc_tensor_info* info);
NPUC_API npuc_status npuc_pipeline_output_info(const npuc_pipeline* p, size_t index, npuc_tensor_info* info);

/**
 * Runs `frames` (>= 1) frames through the stages. inputs[f * num_inputs + i]: frame f's input i, its element count
 * in type dtypes[i] (as npuc_runtime_set_input takes it: the device type, or float32 / float16 for a float input;
 * dtypes NULL: every input float32); outputs[f * num_outputs + o]: room for frame f's output o as float32, its
 * element count. *wall_ms (may be NULL) receives the run's wall time. A failing stage stops the others, resets every
 * stage's state (npuc_pipeline_reset_state) and its error is returned; the outputs are then unspecified.
 */
NPUC_API npuc_status npuc_pipeline_run(npuc_pipeline* p, size_t frames, const void* const* inputs, const npuc_dtype* dtypes,
                                       float* const* outputs, double* wall_ms);
/** int8-pow2 packages: every stage's dynamic quantization back to the calibrated ranges (npuc_runtime_reset_state). */
NPUC_API npuc_status npuc_pipeline_reset_state(npuc_pipeline* p);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NPUC_NPUC_H_ */
