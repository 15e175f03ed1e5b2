"""make_abi_layout.py: writes tests/abi_layout.c from the binding's struct list
(python/axon/_lib.py STRUCTS). Run it after adding a struct or field to the binding:
  /usr/bin/python3 python/tests/make_abi_layout.py
test_binding.py then compares the C compiler's sizeof and offsetof with ctypes'."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
from axon import _lib  # noqa: E402

lines = []
for cname, cls in _lib.STRUCTS.items():
    lines.append(f"    SIZE({cname});")
    for name, *_ in cls._fields_:
        if cls is _lib.LayerSpec and name == "u":  # the anonymous union of layer kinds
            lines += [f"    FIELD({cname}, {kind}.{field});"
                      for kind, struct in (("dense", _lib.LayerDense), ("conv", _lib.LayerConv),
                                           ("pool", _lib.LayerPool))
                      for field, *_ in struct._fields_]
        else:
            lines.append(f"    FIELD({cname}, {name});")
body = "\n".join(lines)
source = f'''/* abi_layout.c: prints the C compiler's sizeof and offsetof of every struct
 * of axon.h that the Python binding declares for ctypes (python/axon/_lib.py,
 * STRUCTS), one "struct field offset" line each ("struct sizeof N" for the
 * size); python/tests/test_binding.py compares them with ctypes' layout, so
 * a field added to axon.h but not to the binding (or in another place) fails
 * there instead of corrupting memory. Written by python/tests/make_abi_layout.py from
 * _lib.STRUCTS; a struct or field missing here is reported by that test. */
#include <stddef.h>
#include <stdio.h>

#include "axon.h"

#define SIZE(type) printf("%s sizeof %zu\\n", #type, sizeof(type))
#define FIELD(type, field) printf("%s %s %zu\\n", #type, #field, offsetof(type, field))

int main(void)
{{
{body}
    return 0;
}}
'''
with open(os.path.join(os.path.dirname(os.path.dirname(here)), "tests", "abi_layout.c"), "w") as f:
    f.write(source)
