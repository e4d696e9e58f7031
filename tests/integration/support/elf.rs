//! The names of the functions linked into an ELF64 binary (its `.symtab`):
//! what the linker kept, unlike a debug build's debug info, which names
//! every type of every crate the binary depends on.

/// The names (mangled) of the function symbols with code in `elf`'s symbol
/// table; empty when `elf` is no little-endian ELF64 file or has none.
pub fn functions(elf: &[u8]) -> Vec<String> {
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    if elf.get(..6) != Some(b"\x7fELF\x02\x01") {
        return Vec::new();
    }
    let (Some(shoff), Some(shentsize), Some(shnum)) = (u64_at(0x28), u16_at(0x3a), u16_at(0x3c))
    else {
        return Vec::new();
    };
    let section = |i: usize| shoff as usize + i * shentsize as usize;
    let mut names = Vec::new();
    for i in 0..shnum as usize {
        let s = section(i);
        // SHT_SYMTAB
        if u32_at(s + 4) != Some(2) {
            continue;
        }
        let (Some(off), Some(size), Some(link), Some(entsize)) = (
            u64_at(s + 0x18),
            u64_at(s + 0x20),
            u32_at(s + 0x28),
            u64_at(s + 0x38),
        ) else {
            continue;
        };
        let Some(strtab) = u64_at(section(link as usize) + 0x18) else {
            continue;
        };
        for sym in (off..off + size).step_by(entsize.max(1) as usize) {
            let sym = sym as usize;
            let (Some(name), Some(info), Some(sz)) =
                (u32_at(sym), elf.get(sym + 4).copied(), u64_at(sym + 0x10))
            else {
                continue;
            };
            // STT_FUNC with code.
            if info & 0xf != 2 || sz == 0 {
                continue;
            }
            let start = strtab as usize + name as usize;
            let Some(rest) = elf.get(start..) else {
                continue;
            };
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            names.push(String::from_utf8_lossy(&rest[..end]).into_owned());
        }
    }
    names
}
