// fanout._native's sparse products (spmm.cc): spmm, spmm_backward_x, kernel_isa.
#pragma once

#include <pybind11/pybind11.h>

namespace fanout::python {

void BindSpmm(pybind11::module_& m);

}  // namespace fanout::python
