# SPDX-License-Identifier: MIT
# install_conf.cmake: `cmake --install` step that installs ampd.conf only
# where there is none yet, so an operator's edits survive a reinstall.
# AMP_CONF_SRC: the shipped file; AMP_CONF_DIR: its directory, relative to
# the install prefix or absolute (Debian's /etc). file(INSTALL) adds
# DESTDIR itself; the check for an existing file must add it by hand.
if(IS_ABSOLUTE "${AMP_CONF_DIR}")
  set(dir "${AMP_CONF_DIR}")
else()
  set(dir "${CMAKE_INSTALL_PREFIX}/${AMP_CONF_DIR}")
endif()
if(EXISTS "$ENV{DESTDIR}${dir}/ampd.conf")
  message(STATUS "Keeping: $ENV{DESTDIR}${dir}/ampd.conf (the shipped one is ampd.conf.default beside it)")
else()
  file(INSTALL "${AMP_CONF_SRC}" DESTINATION "${dir}")
endif()
