// The stages of translate() (translate_stages.cpp): each a function of the Translation, and the conditions that say
// when one applies. translate.cpp lists them in order.
#pragma once

#include "driver/translation.hpp"

namespace npuc::stages {

void options(Translation&);          // the target, its numerics strategy, the family's options, the output folder
void import(Translation&);           // the model file into the IR
void prepareNumerics(Translation&);  // what the family does to the imported model (int8-affine: its own QDQ)
void optimize(Translation&);         // the optimize pipeline, and the family's passes after it
void calibrate(Translation&);        // --calib: the family's calibration or quantization
bool givesAipp(const Translation&);
void aipp(Translation&);             // --aipp: Ascend-style AIPP stages in front of the inputs
bool givesPrePost(const Translation&);
void prePost(Translation&);          // -prepost: the DRP-AI pre/post-processing around the body
void check(Translation&);            // the target's rules, and what no package form holds yet
bool savesOptOnnx(const Translation&);
void saveOptOnnx(Translation&);      // -SaveOptOnnx
bool unsupported(const Translation&);
void errorReport(Translation&);      // PREFIX_error_report.* when the check found unsupported nodes
bool supported(const Translation&);
void estimate(Translation&);         // the time estimate per layer, the convolution kernels chosen
bool writesPackage(const Translation&);
void quantize(Translation&);         // what the package stores, from the checked model (the family's)
void lower(Translation&);            // descriptors, weights, parameters, memory plan and address map
void plan(Translation&);             // the estimate of the package's layers, layers groups; the summary begun
bool servesRanges(const Translation&);
void shapeRanges(Translation&);      // a package serving shape ranges: its table, checked against translations at sizes
void writePackage(Translation&);     // the object package and the files beside it
bool estimatesOnly(const Translation&);
void planWithoutPackage(Translation&);  // a family that writes no package: the estimate and memory plan alone
void reports(Translation&);          // the summary files, the result's figures
void publish(Translation&);          // the staging folder swapped in

}  // namespace npuc::stages
