// fanout._native's compute kernels (kernels.cc): spmm, spmm_backward_x, dropout, dropout_backward,
// kernel_isa.
#pragma once

#include <pybind11/pybind11.h>

namespace fanout::python {

void BindKernels(pybind11::module_& m);

}  // namespace fanout::python
