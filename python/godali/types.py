"""DALI's enum constants (nvidia.dali.types), as godali's pipeline JSON writes them.

Each enum member serialises to its name: types.FLOAT -> "FLOAT", types.RGB -> "RGB",
types.INTERP_TRIANGULAR -> "INTERP_TRIANGULAR". Numeric values follow DALI's.
"""

import enum


class _Named(enum.IntEnum):
    def __str__(self):
        return self.name

    @property
    def json(self):
        """The string the pipeline JSON uses for this value."""
        return self.name


class DALIDataType(_Named):
    """Element types (DALI's DALIDataType)."""

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11


class DALIImageType(_Named):
    """Colour spaces of decoded images (DALI's DALIImageType)."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4


class DALIInterpType(_Named):
    """Interpolation methods (DALI's DALIInterpType)."""

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5


NO_TYPE = DALIDataType.NO_TYPE
UINT8 = DALIDataType.UINT8
UINT16 = DALIDataType.UINT16
UINT32 = DALIDataType.UINT32
UINT64 = DALIDataType.UINT64
INT8 = DALIDataType.INT8
INT16 = DALIDataType.INT16
INT32 = DALIDataType.INT32
INT64 = DALIDataType.INT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT64 = DALIDataType.FLOAT64
BOOL = DALIDataType.BOOL

RGB = DALIImageType.RGB
BGR = DALIImageType.BGR
GRAY = DALIImageType.GRAY
YCbCr = DALIImageType.YCbCr
ANY_DATA = DALIImageType.ANY_DATA

INTERP_NN = DALIInterpType.INTERP_NN
INTERP_LINEAR = DALIInterpType.INTERP_LINEAR
INTERP_CUBIC = DALIInterpType.INTERP_CUBIC
INTERP_LANCZOS3 = DALIInterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = DALIInterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = DALIInterpType.INTERP_GAUSSIAN

# Layout constants: in DALI these are plain layout strings.
NCHW = "CHW"
NHWC = "HWC"
NFCHW = "FCHW"
NFHWC = "FHWC"
SAME = ""

# Schema argument type -> the enum class whose members it accepts.
ENUM_OF_SCHEMA_TYPE = {
    "dtype": DALIDataType,
    "image_type": DALIImageType,
    "interp_type": DALIInterpType,
}

# DLPack (code, bits) -> DALIDataType, for TensorList.dtype.
_FROM_DL = {
    (1, 8): UINT8, (1, 16): UINT16, (1, 32): UINT32, (1, 64): UINT64,
    (0, 8): INT8, (0, 16): INT16, (0, 32): INT32, (0, 64): INT64,
    (2, 16): FLOAT16, (2, 32): FLOAT, (2, 64): FLOAT64, (6, 8): BOOL,
}


def from_dlpack_dtype(code, bits):
    """Returns the DALIDataType of a DLPack (code, bits) pair, or NO_TYPE."""
    return _FROM_DL.get((code, bits), NO_TYPE)
