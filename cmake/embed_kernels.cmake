# SPDX-License-Identifier: MIT
# Writes OUT, a C file holding every kernel source in FILES as a string:
#   const struct kernel_source kernel_sources[] = {{"reverse", "..."}, ...};
# so the daemon needs no kernel files at run time. Run with cmake -P.
set(body "/* Generated from kernels/NAME.cl by cmake/embed_kernels.cmake. */\n#include \"kernels.h\"\n\n")
set(table "const struct kernel_source kernel_sources[] = {\n")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND body "static const char src_${name}[] = {${hex} 0x00};\n")
  string(APPEND table "    {\"${name}\", src_${name}},\n")
endforeach()
string(APPEND table "    {0, 0},\n};\n")
file(WRITE ${OUT} "${body}\n${table}")
