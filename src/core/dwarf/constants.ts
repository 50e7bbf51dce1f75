// DWARF constants used by the reader (DWARF 5 spec, section 7, plus the GNU extensions gcc emits).
// Only the values the reader acts on are named; everything else is skipped by form.

export const TAG = {
  array_type: 0x01, class_type: 0x02, enumeration_type: 0x04, formal_parameter: 0x05, label: 0x0a,
  lexical_block: 0x0b, member: 0x0d, pointer_type: 0x0f, reference_type: 0x10, compile_unit: 0x11,
  structure_type: 0x13, subroutine_type: 0x15, typedef: 0x16, union_type: 0x17, unspecified_parameters: 0x18,
  variant: 0x19, inlined_subroutine: 0x1d, ptr_to_member_type: 0x1f, subrange_type: 0x21, base_type: 0x24,
  const_type: 0x26, enumerator: 0x28, subprogram: 0x2e, variable: 0x34, volatile_type: 0x35,
  restrict_type: 0x37, interface_type: 0x38, namespace: 0x39, unspecified_type: 0x3b, partial_unit: 0x3c,
  rvalue_reference_type: 0x42, type_unit: 0x41, atomic_type: 0x47, call_site: 0x48, skeleton_unit: 0x4a,
  module: 0x1e, variant_part: 0x33, template_type_parameter: 0x2f, GNU_call_site: 0x4109,
} as const;

export const AT = {
  sibling: 0x01, location: 0x02, name: 0x03, byte_size: 0x0b, stmt_list: 0x10, low_pc: 0x11, high_pc: 0x12,
  language: 0x13, comp_dir: 0x1b, const_value: 0x1c, inline: 0x20, producer: 0x25, upper_bound: 0x2f,
  abstract_origin: 0x31, bit_size: 0x0d, bit_offset: 0x0c, count: 0x37, data_member_location: 0x38,
  decl_file: 0x3a, decl_line: 0x3b, declaration: 0x3c, encoding: 0x3e, external: 0x3f, frame_base: 0x40,
  specification: 0x47, type: 0x49, ranges: 0x55, entry_pc: 0x52, lower_bound: 0x22, call_file: 0x58,
  call_line: 0x59, data_bit_offset: 0x6b, linkage_name: 0x6e, main_subprogram: 0x6a,
  signature: 0x69, str_offsets_base: 0x72, addr_base: 0x73, rnglists_base: 0x74, dwo_name: 0x76, loclists_base: 0x8c,
  MIPS_linkage_name: 0x2007, GNU_addr_base: 0x2133, GNU_ranges_base: 0x2132, artificial: 0x34,
} as const;

export const FORM = {
  addr: 0x01, block2: 0x03, block4: 0x04, data2: 0x05, data4: 0x06, data8: 0x07, string: 0x08, block: 0x09,
  block1: 0x0a, data1: 0x0b, flag: 0x0c, sdata: 0x0d, strp: 0x0e, udata: 0x0f, ref_addr: 0x10, ref1: 0x11,
  ref2: 0x12, ref4: 0x13, ref8: 0x14, ref_udata: 0x15, indirect: 0x16, sec_offset: 0x17, exprloc: 0x18,
  flag_present: 0x19, strx: 0x1a, addrx: 0x1b, ref_sup4: 0x1c, strp_sup: 0x1d, data16: 0x1e, line_strp: 0x1f,
  ref_sig8: 0x20, implicit_const: 0x21, loclistx: 0x22, rnglistx: 0x23, ref_sup8: 0x24, strx1: 0x25,
  strx2: 0x26, strx3: 0x27, strx4: 0x28, addrx1: 0x29, addrx2: 0x2a, addrx3: 0x2b, addrx4: 0x2c,
  GNU_addr_index: 0x1f01, GNU_str_index: 0x1f02, GNU_ref_alt: 0x1f20, GNU_strp_alt: 0x1f21,
} as const;

export const UT = {
  compile: 0x01, type: 0x02, partial: 0x03, skeleton: 0x04, split_compile: 0x05, split_type: 0x06,
} as const;

export const ATE = {
  address: 0x1, boolean: 0x2, complex_float: 0x3, float: 0x4, signed: 0x5, signed_char: 0x6, unsigned: 0x7,
  unsigned_char: 0x8, UTF: 0x10,
} as const;

export const LANG_C = new Set([0x01, 0x02, 0x0c, 0x1d, 0x2c]); // C89, C, C99, C11, C17

export const OP = {
  addr: 0x03, deref: 0x06, const1u: 0x08, const1s: 0x09, const2u: 0x0a, const2s: 0x0b, const4u: 0x0c,
  const4s: 0x0d, const8u: 0x0e, const8s: 0x0f, constu: 0x10, consts: 0x11, dup: 0x12, drop: 0x13,
  over: 0x14, pick: 0x15, swap: 0x16, rot: 0x17, xderef: 0x18, abs: 0x19, and: 0x1a, div: 0x1b, minus: 0x1c,
  mod: 0x1d, mul: 0x1e, neg: 0x1f, not: 0x20, or: 0x21, plus: 0x22, plus_uconst: 0x23, shl: 0x24, shr: 0x25,
  shra: 0x26, xor: 0x27, bra: 0x28, eq: 0x29, ge: 0x2a, gt: 0x2b, le: 0x2c, lt: 0x2d, ne: 0x2e, skip: 0x2f,
  lit0: 0x30, lit31: 0x4f, reg0: 0x50, reg31: 0x6f, breg0: 0x70, breg31: 0x8f, regx: 0x90, fbreg: 0x91,
  bregx: 0x92, piece: 0x93, deref_size: 0x94, nop: 0x96, call_frame_cfa: 0x9c, implicit_value: 0x9e,
  stack_value: 0x9f, implicit_pointer: 0xa0, addrx: 0xa1, constx: 0xa2, entry_value: 0xa3,
  const_type: 0xa4, regval_type: 0xa5, deref_type: 0xa6, convert: 0xa8, reinterpret: 0xa9,
  bit_piece: 0x9d, push_object_address: 0x97, call2: 0x98, call4: 0x99, form_tls_address: 0x9b,
  GNU_push_tls_address: 0xe0, GNU_entry_value: 0xf3, GNU_implicit_pointer: 0xf2, GNU_parameter_ref: 0xfa,
  GNU_addr_index: 0xfb, GNU_const_index: 0xfc, GNU_regval_type: 0xf5, GNU_deref_type: 0xf6,
  GNU_convert: 0xf7, GNU_const_type: 0xf4, GNU_reinterpret: 0xf9, GNU_variable_value: 0xfd,
} as const;

export const RLE = {
  end_of_list: 0, base_addressx: 1, startx_endx: 2, startx_length: 3, offset_pair: 4, base_address: 5,
  start_end: 6, start_length: 7,
} as const;

export const LLE = {
  end_of_list: 0, base_addressx: 1, startx_endx: 2, startx_length: 3, offset_pair: 4, default_location: 5,
  base_address: 6, start_end: 7, start_length: 8, GNU_view_pair: 9,
} as const;

export const LNS = {
  copy: 1, advance_pc: 2, advance_line: 3, set_file: 4, set_column: 5, negate_stmt: 6, set_basic_block: 7,
  const_add_pc: 8, fixed_advance_pc: 9, set_prologue_end: 10, set_epilogue_begin: 11, set_isa: 12,
} as const;

export const LNE = { end_sequence: 1, set_address: 2, define_file: 3, set_discriminator: 4 } as const;

export const LNCT = { path: 1, directory_index: 2, timestamp: 3, size: 4, MD5: 5 } as const;

export const INL = { not_inlined: 0, inlined: 1, declared_not_inlined: 2, declared_inlined: 3 } as const;
