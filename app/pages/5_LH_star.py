"""LH*: a small file replayed one insert at a time (the file state, each bucket, the splits), and
the route of one request from a client with a chosen image: forwards and the IAM. The logic is
``explorer.lhstar_*``; the LH* rules are ``minidb.sdds.addressing``."""

import explorer
import explorer_ui as ui
import streamlit as st

from minidb.errors import NotImplementedYet

ui.page("LH*: splits and forwarding",
        "A file grows one bucket at a time; clients guess where keys live from their own image "
        "of the file, and servers forward what they get wrong (LH* paper, Section 2).")

setup = st.columns(4)
capacity = setup[0].number_input("Bucket capacity (records)", 1, 20, 4, key="lh_capacity")
n0 = setup[1].number_input("N0 (first buckets)", 1, 4, 1, key="lh_n0")
inserts = setup[2].number_input("Keys to insert", 1, 400, 60, key="lh_inserts")
order = setup[3].selectbox("Key order", ["random", "ascending"], key="lh_order")
try:
    steps = explorer.lhstar_growth(int(capacity), int(n0),
                                   explorer.lhstar_keys(int(inserts), order, seed=1))
except NotImplementedYet:  # the student release: minidb's LH* rules are Lab 4's assignment
    st.info("minidb's LH* rules are Lab 4's assignment in this copy (they raise "
            "NotImplementedYet): this page runs once the instructor's version is installed. "
            "Lab 4 (labs/lab4_lhstar) runs LH* files on your own rules.")
    st.stop()

step_no = st.slider("Step (one insert each)", 1, len(steps), len(steps), key="lh_step")
step = steps[step_no - 1]
numbers = st.columns(4)
numbers[0].metric("level i", step.level)
numbers[1].metric("split pointer n", step.split)
numbers[2].metric("buckets", len(step.buckets))
numbers[3].metric("key inserted", step.key)
if step.split_pair:
    st.success(f"This insert overflowed a bucket: the coordinator split bucket "
               f"{step.split_pair[0]} into {step.split_pair[0]} and {step.split_pair[1]}.")
left, right = st.columns([1, 1])
left.altair_chart(explorer.lhstar_chart(step, int(capacity)))
left.dataframe(explorer.lhstar_buckets_frame(step, int(capacity)), hide_index=True)

right.subheader("A client's request")
image = right.columns(3)
image_level = image[0].number_input("image i'", 0, 12, 0, key="lh_image_level")
image_split = image[1].number_input("image n'", 0, 4096, 0, key="lh_image_split")
key = image[2].number_input("key", 0, 10**6, int(step.key), key="lh_key")
if image_split >= int(n0) << int(image_level):
    right.error(f"n' must be below 2**i' x N0 = {int(n0) << int(image_level)}")
else:
    lines, forwards, new_image = explorer.lhstar_route(step.level, step.split, int(n0), int(image_level),
                                             int(image_split), int(key))
    right.markdown("\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=1)))
    right.caption("no forward, no IAM: the image was good enough for this key"
                  if new_image is None else
                  f"{forwards} forward(s) and one IAM; the client's next image: "
                  f"({new_image[0]}, {new_image[1]})")
