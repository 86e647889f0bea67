"""Hardware profiles: every constant behind the modeled clock, with its value, unit and source
(``minidb.cost.profiles``), so a class can ask where a modeled second came from. Needs no
results store."""

import explorer_ui as ui
import pandas as pd
import streamlit as st

from minidb.cost import PROFILES, SOURCE_KINDS

ui.page("Hardware profiles",
        "The papers' machines as the cost model sees them. Each constant says where its number "
        "comes from: a paper states it, it is derived from stated numbers, calibrated on one "
        "published cell (that cell is then not counted as reproduced), an engineering estimate, "
        "or not modeled on this machine (0).")

names = list(PROFILES)
name = st.selectbox("Profile", names, index=names.index("gamma"), key="profile_name")
profile = PROFILES[name]
st.markdown(f"**{profile.name}**: {profile.description}")

table = pd.DataFrame(profile.provenance())
counts = table["kind"].value_counts()
for where, kind in zip(st.columns(len(SOURCE_KINDS)), SOURCE_KINDS, strict=True):
    where.metric(kind, int(counts.get(kind, 0)))

if profile.calibrated_on:
    st.subheader("Calibrated on")
    for cell in profile.calibrated_on:
        st.markdown(f"- {cell}")
else:
    st.caption("No constant of this profile is calibrated on a published cell.")

shown = st.multiselect("Show constants whose source is", list(SOURCE_KINDS),
                       default=[k for k in SOURCE_KINDS if k != "not modeled"],
                       key="profile_kinds")
table = table[table["kind"].isin(shown)].assign(
    value=lambda t: t["value"].map(lambda v: "none" if v is None else f"{v:.6g}"))
st.dataframe(table[["constant", "value", "kind", "unit", "source"]], hide_index=True,
             use_container_width=True)
