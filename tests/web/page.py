"""The play page as a person uses it: choose settings, click points by the board's own
coordinate labels, press buttons, read what the page says."""

from __future__ import annotations

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select


def board_attr(driver, name: str) -> str | None:
    return driver.find_element(By.ID, "board").get_attribute(f"data-{name}")


def text(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def move_is(n: int):
    return lambda d: board_attr(d, "move") == str(n)


def configure(driver, mode: str, **fields) -> None:
    Select(driver.find_element(By.ID, "mode")).select_by_value(mode)
    for name, value in fields.items():
        element = driver.find_element(By.ID, name.replace("_", "-"))
        if element.tag_name == "select":
            Select(element).select_by_value(value)
        elif element.get_attribute("type") == "checkbox":
            if element.is_selected() != value:
                element.click()
        else:  # as a person does: select what is there and type over it
            element.send_keys(Keys.CONTROL, "a")
            element.send_keys(str(value) if str(value) else Keys.BACKSPACE)


def point_offset(driver, vertex: str) -> tuple[int, int]:
    """Where the board's own coordinate labels put ``vertex``, as an offset from the
    board's centre: the column letter's x and the row number's y."""
    board = driver.find_element(By.ID, "board").rect
    col = driver.find_element(By.CSS_SELECTOR, f'text[data-col="{vertex[0]}"]').rect
    row = driver.find_element(By.CSS_SELECTOR, f'text[data-row="{vertex[1:]}"]').rect
    x = col["x"] + col["width"] / 2 - (board["x"] + board["width"] / 2)
    y = row["y"] + row["height"] / 2 - (board["y"] + board["height"] / 2)
    return round(x), round(y)


def click_point(driver, vertex: str) -> None:
    dx, dy = point_offset(driver, vertex)
    board = driver.find_element(By.ID, "board")
    ActionChains(driver).move_to_element_with_offset(board, dx, dy).click().perform()


def press(driver, button: str) -> None:
    driver.find_element(By.ID, button).click()
