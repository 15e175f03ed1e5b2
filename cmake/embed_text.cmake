# embed_text.cmake: writes OUTPUT, a C header defining `static const char
# NAME[]` with the bytes of INPUT (cmake -DINPUT=.. -DOUTPUT=.. -DNAME=.. -P).
# The OpenCL plugin's kernel sources are compiled into it this way, so that
# nothing is read from disk at run time. Bytes as hexadecimal numbers: no
# quoting of the source, and no limit on a string literal's length.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(source_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "/* Generated from ${source_name} by cmake/embed_text.cmake: do not edit. */\n"
     "static const char ${NAME}[] = {\n${bytes}0x00};\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
