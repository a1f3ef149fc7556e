# Prints a TIR kernel of N nested `for` loops, each carrying an f32 (python3 nest.py N): the deep
# nests of deep-nesting.test and of the compile-time measurement in docs/LIMITS.md.
import sys
d = int(sys.argv[1])
out = ["kernel @deep(%out: ptr<f32>, %n: i32) {num_warps = 4} {",
       "  %c0 = constant {value = 0} : i32", "  %c1 = constant {value = 1} : i32",
       "  %f0 = constant {value = 0.0} : f32"]
for i in range(d):
    ind = "  " * min(i + 1, 8)  # bounded, so that deep nests stay small
    prev = "%f0" if i == 0 else f"%a{i-1}"
    out.append(f"{ind}%r{i} = for %c0, %n, %c1, {prev} {{num_stages = 1}} : f32 {{")
    out.append(f"{ind}^body(%i{i}: i32, %a{i}: f32):")
for i in reversed(range(d)):
    ind = "  " * min(i + 1, 8)  # bounded, so that deep nests stay small
    if i == d - 1:
        out.append(f"{ind}  %x = cast %i{i} : f32")
        out.append(f"{ind}  %y = add %a{i}, %x : f32")
        out.append(f"{ind}  yield %y")
    else:
        out.append(f"{ind}  yield %r{i+1}")
    out.append(f"{ind}}}")
out.append("  store %out, %r0")
out.append("}")
print("\n".join(out))
