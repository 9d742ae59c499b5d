# SPDX-License-Identifier: MIT
# Writes OUT, a C file holding every kernel source in FILES as a string:
#   const struct kernel_source kernel_sources[] = {{"reverse", "..."}, ...};
# so the daemon needs no kernel files at run time. Each source is HEADER
# (kernels/kernel_abi.h: what host and kernels share) followed by the
# kernel file, from a #line that keeps the compiler's line numbers the
# file's own. Run with cmake -P.
set(body "/* Generated from kernels/kernel_abi.h and kernels/NAME.cl by cmake/embed_kernels.cmake. */\n#include \"kernels.h\"\n\n")
set(table "const struct kernel_source kernel_sources[] = {\n")
file(READ ${HEADER} header HEX)
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} hex HEX)
  string(HEX "#line 1 \"${name}.cl\"\n" line)
  set(hex "${header}${line}${hex}")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND body "static const char src_${name}[] = {${hex} 0x00};\n")
  string(APPEND table "    {\"${name}\", src_${name}},\n")
endforeach()
string(APPEND table "    {0, 0},\n};\n")
file(WRITE ${OUT} "${body}\n${table}")
