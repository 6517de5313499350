"""The HelpMeOut object hierarchy (paper Appendix, Table 5).

Five classes: 31 non-movable *locations* (each either an ``ontop`` surface or an ``inside`` space) and the 156
movable types of the main text (31 receptacles, 49 foods, 31 tools, 45 things), 187 types in all -- the counts of
Table 5. The paper lists the subclass names but not every member; the members below are ours, chosen so that each
subclass has same-subclass *confusables* (Table 9's gate for object/tool substitution needs them).

Affordance sets say which operators accept a type (e.g. only ``OPENABLE`` things can be opened); they are the
type constraints of the operators in :mod:`ego_adr.helpmeout.world.operators`.
"""

from __future__ import annotations

import re

# --- locations (Table 5: 31 types, ontop / inside) ----------------------------------------------------------
ONTOP_LOCATIONS = (
    "floor", "countertop", "table", "desk", "shelf", "stove", "bed", "sofa", "toilet", "coffee_table",
    "kitchen_island", "nightstand", "ironing_board", "bathroom_counter", "windowsill", "shoe_rack",
)
INSIDE_LOCATIONS = (
    "cabinet", "refrigerator", "freezer", "microwave", "oven", "dishwasher", "sink", "washing_machine", "dryer",
    "toaster", "closet", "drawer", "medicine_cabinet", "bathtub", "pantry",
)
LOCATIONS = ONTOP_LOCATIONS + INSIDE_LOCATIONS

# --- movable classes and subclasses (Table 5) ---------------------------------------------------------------
HIERARCHY: dict[str, dict[str, tuple[str, ...]]] = {
    "receptacle": {
        "tableware": ("plate", "bowl", "mug", "cup", "glass", "platter"),
        "vessel": ("kettle", "teapot", "jug", "bottle", "jar", "pitcher", "watering_can"),
        "cooking_vessel": ("pan", "pot", "saucepan", "baking_tray", "wok"),
        "bag": ("trash_bag", "lunch_bag", "shopping_bag"),
        "box": ("gift_box", "lunchbox", "storage_box", "pill_organizer"),
        "basket": ("laundry_basket", "fruit_basket"),
        "tray": ("serving_tray", "cutting_board"),
        "bucket": ("bucket",),
        "ashcan": ("trash_can",),
    },
    "food": {
        "fruit": ("apple", "banana", "orange", "pear", "lemon", "grapes", "strawberry", "peach"),
        "vegetable": ("carrot", "tomato", "cucumber", "onion", "potato", "lettuce", "bell_pepper", "broccoli"),
        "drink": ("milk", "orange_juice", "apple_juice", "coffee_powder", "tea_bag", "cocoa_powder"),
        "protein": ("egg", "chicken_breast", "fish_fillet", "tofu", "sausage"),
        "bread_grain": ("bread", "bagel", "rice", "pasta", "cereal", "oats"),
        "spread": ("butter", "jam", "peanut_butter", "honey", "cream_cheese"),
        "condiment": ("sugar", "salt", "pepper"),
        "sauce": ("tomato_sauce", "soy_sauce", "olive_oil"),
        "prepared_food": ("soup", "leftovers", "frozen_meal"),
        "snack": ("crackers", "cookies"),
    },
    "tool": {
        "cutlery": ("knife", "bread_knife", "butter_knife", "fork", "spoon", "teaspoon", "tablespoon", "spatula",
                    "ladle", "peeler", "whisk", "tongs"),
        "cleaning_tool": ("sponge", "cloth", "dish_towel", "scrub_brush", "broom", "mop"),
        "cleansing": ("dish_soap", "detergent", "spray_cleaner"),
        "wrapping_tool": ("scissors", "tape"),
        "writing_tool": ("pen", "pencil", "marker"),
        "toiletry": ("toothbrush", "toothpaste", "comb"),
        "laundry_tool": ("iron", "hanger"),
    },
    "thing": {
        "clothing": ("shirt", "pants", "sweater", "sock", "dress", "jacket"),
        "linen": ("towel", "bed_sheet", "pillowcase", "tablecloth", "napkin"),
        "soft_furnishing": ("pillow", "blanket", "cushion"),
        "footwear": ("shoes", "slippers", "boots"),
        "headwear": ("hat", "cap"),
        "accessory": ("glasses", "watch", "scarf", "keys", "wallet"),
        "wrapping_material": ("wrapping_paper", "aluminum_foil", "plastic_wrap", "ribbon"),
        "paper_product": ("paper", "envelope", "notebook", "book", "paper_towel", "newspaper"),
        "personal_item": ("phone", "remote_control", "lamp", "plant", "gift", "candle"),
        "medication": ("pill_bottle", "vitamins", "cough_syrup", "eye_drops", "inhaler"),
    },
}

TYPE_CLASS: dict[str, str] = {loc: "location" for loc in LOCATIONS}
TYPE_SUBCLASS: dict[str, str] = {loc: ("ontop" if loc in ONTOP_LOCATIONS else "inside") for loc in LOCATIONS}
for _cls, _subs in HIERARCHY.items():
    for _sub, _types in _subs.items():
        for _t in _types:
            if _t in TYPE_CLASS:
                raise RuntimeError(f"duplicate object type {_t}")
            TYPE_CLASS[_t] = _cls
            TYPE_SUBCLASS[_t] = _sub
MOVABLE_TYPES = tuple(t for t, c in TYPE_CLASS.items() if c != "location")

# --- affordances (operator type constraints) ----------------------------------------------------------------
OPENABLE_LOCATIONS = frozenset({"cabinet", "refrigerator", "freezer", "microwave", "oven", "dishwasher",
                                "washing_machine", "dryer", "closet", "drawer", "medicine_cabinet", "pantry"})
SWITCHABLE_LOCATIONS = frozenset({"stove", "microwave", "oven", "dishwasher", "washing_machine", "dryer", "toaster"})
# appliances that only run with the door shut
CLOSED_TO_RUN = frozenset({"microwave", "oven", "dishwasher", "washing_machine", "dryer"})
WATER_SOURCES = frozenset({"sink", "bathtub"})
DRAINS = frozenset({"sink", "bathtub", "toilet"})
OPENABLE_OBJECTS = frozenset({"jar", "bottle", "gift_box", "lunchbox", "storage_box", "pill_organizer", "trash_can",
                              "pill_bottle", "teapot"})
SWITCHABLE_OBJECTS = frozenset({"kettle", "lamp", "iron"})
# receptacles that hold things *on* them rather than *in* them
ONTOP_RECEPTACLES = frozenset({"plate", "platter", "serving_tray", "cutting_board", "baking_tray"})
LIQUIDS = frozenset({"milk", "orange_juice", "apple_juice", "tomato_sauce", "soy_sauce", "olive_oil", "cough_syrup",
                     "dish_soap", "detergent", "honey"})
BULK = frozenset({"coffee_powder", "cocoa_powder", "sugar", "salt", "pepper", "rice", "pasta", "cereal", "oats"})
SPREADS = frozenset(HIERARCHY["food"]["spread"])
CUTTABLE = frozenset(HIERARCHY["food"]["fruit"] + HIERARCHY["food"]["vegetable"]
                     + ("bread", "bagel", "chicken_breast", "fish_fillet", "tofu", "sausage", "cream_cheese"))
PEELABLE = frozenset({"apple", "banana", "orange", "pear", "lemon", "peach", "carrot", "cucumber", "onion", "potato"})
FOLDABLE = frozenset(HIERARCHY["thing"]["clothing"] + HIERARCHY["thing"]["linen"]
                     + ("blanket", "scarf", "paper", "newspaper", "wrapping_paper"))
MEDICATIONS = frozenset(HIERARCHY["thing"]["medication"])
WRITABLE = frozenset({"paper", "envelope", "notebook"})
WRAPPING = frozenset(HIERARCHY["thing"]["wrapping_material"])
DRYING_CLOTHS = frozenset({"dish_towel", "towel", "cloth", "paper_towel"})
TOOL_TYPES = frozenset(t for t, c in TYPE_CLASS.items() if c == "tool")
FOOD_TYPES = frozenset(t for t, c in TYPE_CLASS.items() if c == "food")
RECEPTACLE_TYPES = frozenset(t for t, c in TYPE_CLASS.items() if c == "receptacle")

# Curated look-alike pairs; the rest of a subclass is the fallback pool (Table 9: "same-subclass confusable").
_CONFUSABLE_PAIRS = (
    ("sugar", "salt"), ("coffee_powder", "cocoa_powder"), ("milk", "orange_juice"), ("orange_juice", "apple_juice"),
    ("butter", "cream_cheese"), ("jam", "peanut_butter"), ("rice", "oats"), ("pasta", "rice"), ("cereal", "oats"),
    ("apple", "pear"), ("orange", "lemon"), ("peach", "apple"), ("cucumber", "zucchini_unused"),
    ("tomato", "bell_pepper"), ("carrot", "potato"), ("bread", "bagel"), ("egg", "tofu"),
    ("mug", "cup"), ("cup", "glass"), ("plate", "platter"), ("bowl", "mug"), ("pan", "wok"), ("pot", "saucepan"),
    ("jar", "bottle"), ("lunchbox", "storage_box"), ("shopping_bag", "lunch_bag"),
    ("spoon", "fork"), ("teaspoon", "tablespoon"), ("spoon", "teaspoon"), ("knife", "bread_knife"),
    ("butter_knife", "knife"), ("spatula", "ladle"), ("peeler", "knife"), ("whisk", "fork"), ("sponge", "cloth"),
    ("dish_towel", "cloth"), ("scrub_brush", "sponge"), ("pen", "pencil"), ("pencil", "marker"),
    ("toothpaste", "dish_soap_unused"), ("scissors", "knife"), ("dish_soap", "detergent"),
    ("shirt", "sweater"), ("pants", "dress"), ("sock", "scarf_unused"), ("towel", "bed_sheet"),
    ("pillowcase", "napkin"), ("shoes", "slippers"), ("hat", "cap"), ("wrapping_paper", "newspaper"),
    ("vitamins", "pill_bottle"), ("cough_syrup", "eye_drops"), ("glasses", "watch"), ("keys", "wallet"),
    ("aluminum_foil", "plastic_wrap"),
)
CONFUSABLE: dict[str, tuple[str, ...]] = {}
for _a, _b in _CONFUSABLE_PAIRS:
    if _a in TYPE_CLASS and _b in TYPE_CLASS:
        CONFUSABLE.setdefault(_a, ())
        CONFUSABLE.setdefault(_b, ())
        CONFUSABLE[_a] += (_b,)
        CONFUSABLE[_b] += (_a,)

# Locations a person plausibly confuses (same relation and openability, so the swapped put stays executable).
CONFUSABLE_LOCATIONS: dict[str, tuple[str, ...]] = {
    "refrigerator": ("freezer", "cabinet"), "freezer": ("refrigerator",), "cabinet": ("pantry", "drawer"),
    "pantry": ("cabinet",), "drawer": ("cabinet",), "closet": ("drawer", "cabinet"),
    "medicine_cabinet": ("cabinet", "drawer"), "microwave": ("oven",), "oven": ("microwave",),
    "washing_machine": ("dryer", "dishwasher"), "dryer": ("washing_machine",),
    "countertop": ("table", "kitchen_island"), "table": ("countertop", "coffee_table", "desk"),
    "kitchen_island": ("countertop",), "shelf": ("windowsill", "desk"), "desk": ("table", "nightstand"),
    "nightstand": ("desk", "bathroom_counter"), "bathroom_counter": ("nightstand", "countertop"),
    "bed": ("sofa",), "sofa": ("bed",), "coffee_table": ("table",), "windowsill": ("shelf",),
    "shoe_rack": ("floor",), "floor": ("shoe_rack",), "sink": ("bathtub",), "dishwasher": ("sink",),
}

_SUFFIX = re.compile(r"_\d+$")


def type_of(name: str) -> str:
    """Object type of an instance name (``mug_2`` -> ``mug``); names without a suffix are their own type."""
    return _SUFFIX.sub("", name)


def class_of(name: str) -> str | None:
    return TYPE_CLASS.get(type_of(name))


def subclass_of(name: str) -> str | None:
    return TYPE_SUBCLASS.get(type_of(name))


def is_location(name: str) -> bool:
    return TYPE_CLASS.get(type_of(name)) == "location"


def confusables(name: str) -> tuple[str, ...]:
    """Look-alikes of a type: curated pairs first, then the rest of its subclass (Table 9)."""
    t = type_of(name)
    if is_location(t):
        return CONFUSABLE_LOCATIONS.get(t, ())
    sub = TYPE_SUBCLASS.get(t)
    pool = [x for x in HIERARCHY.get(TYPE_CLASS.get(t, ""), {}).get(sub or "", ()) if x != t]
    curated = list(CONFUSABLE.get(t, ()))
    return tuple(curated + [x for x in pool if x not in curated])


def counts() -> dict[str, int]:
    """Types per class, for the docs and the tests (Table 5: 31/31/49/31/45)."""
    out: dict[str, int] = {}
    for c in TYPE_CLASS.values():
        out[c] = out.get(c, 0) + 1
    return out
