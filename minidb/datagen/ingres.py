"""EMP and DEPT, the two relations of the Distributed INGRES measurements (Stonebraker et al. 1983).

The paper (Section 2) distributes ``EMP(name, salary, manager, age, dept)`` over three sites by
department ("shoe" at Berkeley, "toy" at Paris, the rest at Boston) and ``DEPT(dname, floor,
budget)`` over two sites by ``budget > 5``; its example query joins them on ``E.dept = D.dname``
with ``D.floor = 1``, and its example update moves employees with ``salary > 10000`` to "toy".
Section 3 fixes the sizes: 30,000 EMP tuples of 38 bytes and 1,500 DEPT tuples of 18 bytes.

The paper gives no field widths or value ranges, so minidb chooses them to add up to those
sizes and to make the paper's predicates select something:

    EMP   name char(10), salary int32, manager char(10), age int16, dept char(12)  = 38 bytes
    DEPT  dname char(12), floor int16, budget int32                               = 18 bytes

* name: 'emp' and the employee number in 7 digits ('emp0000042'); unique, so at most 10**7.
* salary: random 5,000..50,000 (so ``salary > 10000`` holds for most, not all).
* manager: the name of another employee, chosen at random (with one employee, himself).
* age: random 18..65.
* dept / dname: department d is called 'shoe' for d = 0, 'toy' for d = 1 and 'dept' plus d in 8
  digits otherwise ('dept00000042'); every employee works in a random department 0..D-1.
* floor: random 1..10 (so ``floor = 1`` picks about a tenth of DEPT).
* budget: random 1..10 (so ``budget > 5`` splits DEPT in two halves).

``emp(departments=D)`` must be given the number of rows of the DEPT relation it goes with
(1,500 by default, as in the paper): then every EMP.dept names a DEPT tuple. Random values come
from the counter-based generator in ``_random``, one stream per column, so slices of either
relation can be computed on their own.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from minidb.datagen import _random as rnd
from minidb.datagen._common import (
    build_table,
    check_int,
    check_seed,
    check_slice,
    decimal_digits,
    text_array,
)
from minidb.errors import MinidbError
from minidb.storage.schema import Schema, char_column, int_column

EMP_SCHEMA = Schema(
    [
        char_column("name", 10),
        int_column("salary", "int32"),
        char_column("manager", 10),
        int_column("age", "int16"),
        char_column("dept", 12),
    ]
)
DEPT_SCHEMA = Schema(
    [char_column("dname", 12), int_column("floor", "int16"), int_column("budget", "int32")]
)

EMP_ROWS, DEPT_ROWS = 30_000, 1_500  # the paper's Section 3
MAX_EMP = 10**7  # 'emp' + 7 digits
MAX_DEPT = 10**8  # 'dept' + 8 digits
NAMED_DEPARTMENTS = (b"shoe", b"toy")  # departments 0 and 1, as in the paper's examples
SALARY, AGE, FLOOR, BUDGET = (5_000, 50_000), (18, 65), (1, 10), (1, 10)

# Streams of the counter-based generator, one per random column.
_SALARY, _MANAGER, _AGE, _DEPT, _FLOOR, _BUDGET = 40, 41, 42, 43, 50, 51


def employee_names(numbers: np.ndarray) -> np.ndarray:
    """(rows, 10) uint8 matrix: 'emp' followed by the employee number in 7 digits."""
    mat = np.empty((len(numbers), 10), dtype=np.uint8)
    mat[:, :3] = np.frombuffer(b"emp", dtype=np.uint8)
    mat[:, 3:] = decimal_digits(numbers, 7)
    return mat


def department_names(numbers: np.ndarray) -> np.ndarray:
    """(rows, 12) uint8 matrix, NUL-padded: 'shoe', 'toy', then 'dept' + 8 digits."""
    numbers = np.asarray(numbers, dtype=np.int64)
    mat = np.empty((len(numbers), 12), dtype=np.uint8)
    mat[:, :4] = np.frombuffer(b"dept", dtype=np.uint8)
    mat[:, 4:] = decimal_digits(numbers, 8)
    for d, name in enumerate(NAMED_DEPARTMENTS):
        row = np.zeros(12, dtype=np.uint8)
        row[: len(name)] = np.frombuffer(name, dtype=np.uint8)
        mat[numbers == d] = row
    return mat


def emp(
    rows: int = EMP_ROWS,
    seed: int = 0,
    departments: int = DEPT_ROWS,
    start: int = 0,
    stop: int | None = None,
) -> pa.Table:
    """Rows [start, stop) of EMP (38 bytes a tuple); ``departments`` = rows of the matching DEPT."""
    rows, start, stop = check_slice("emp", rows, start, stop, max_rows=MAX_EMP)
    seed = check_seed(seed)
    departments = check_int(departments, "emp: departments")
    if not 1 <= departments <= MAX_DEPT:
        raise MinidbError(
            f"emp: departments must be 1 to {MAX_DEPT:,} (the rows of the DEPT relation), got {departments}"
        )
    counters = rnd.rows(start, stop)
    numbers = np.arange(start, stop, dtype=np.int64)
    if rows > 1:  # another employee: draw from the rows-1 others, skipping oneself
        manager = rnd.uniform_int(seed, _MANAGER, counters, 0, rows - 2)
        manager += manager >= numbers
    else:
        manager = numbers.copy()
    cols = {
        "name": text_array(employee_names(numbers)),
        "salary": rnd.uniform_int(seed, _SALARY, counters, *SALARY).astype(np.int32),
        "manager": text_array(employee_names(manager)),
        "age": rnd.uniform_int(seed, _AGE, counters, *AGE).astype(np.int16),
        "dept": text_array(
            department_names(rnd.uniform_int(seed, _DEPT, counters, 0, departments - 1))
        ),
    }
    return build_table(EMP_SCHEMA, cols)


def dept(rows: int = DEPT_ROWS, seed: int = 0, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of DEPT (18 bytes a tuple): department d is row d."""
    rows, start, stop = check_slice("dept", rows, start, stop, max_rows=MAX_DEPT)
    seed = check_seed(seed)
    counters = rnd.rows(start, stop)
    cols = {
        "dname": text_array(department_names(np.arange(start, stop, dtype=np.int64))),
        "floor": rnd.uniform_int(seed, _FLOOR, counters, *FLOOR).astype(np.int16),
        "budget": rnd.uniform_int(seed, _BUDGET, counters, *BUDGET).astype(np.int32),
    }
    return build_table(DEPT_SCHEMA, cols)
