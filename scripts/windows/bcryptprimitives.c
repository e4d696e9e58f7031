/* A stand-in bcryptprimitives.dll for running Rust Windows binaries under
 * Wine 8, which lacks ProcessPrng (Rust's std asks for it at start-up on
 * Windows 10+). It is implemented over RtlGenRandom (SystemFunction036 in
 * advapi32), which Wine has. Used only by scripts/wine-runner.sh, never
 * shipped: real Windows has its own bcryptprimitives.dll.
 *
 * Build: x86_64-w64-mingw32-gcc -shared -o bcryptprimitives.dll \
 *        bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
